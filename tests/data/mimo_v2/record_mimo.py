# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33 builds for MiMo-V2 (MiMoV2FlashForCausalLM,
MiMoV2ForCausalLM) per config.json here: each KV cache layer's spec, vLLM's KV cache groups
and KVCacheConfig on a given memory (the engine core's road; at TP 1, and at a case's
TP_CASES rank 0), and the weights per rank at TP 1, 2, 4, 8
(../weights_census/record_census.py's way)
-> answers.json. From the project root:

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        nice -n 19 $R/venv/bin/python tests/data/mimo_v2/record_mimo.py [CONFIG ...]

mimo_build.py builds the model (its substitutions listed in answers.json).
"""
import json, re, sys, textwrap, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import mimo_build as b
from vllm.config import set_current_vllm_config
from vllm.distributed.kv_transfer.kv_connector.utils import get_current_attn_backends
from vllm.v1.attention.backends.utils import (get_supported_kv_cache_layouts,
                                              resolve_kv_cache_layout)
from vllm.v1.core import kv_cache_planning as P
from vllm.v1.core.kv_cache_utils import (generate_scheduler_kv_cache_config,
                                         get_kv_cache_capacity,
                                         get_max_concurrency_for_kv_cache_config,
                                         resolve_cache_hit_alignment_tokens,
                                         resolve_kv_cache_block_sizes)
from vllm.v1.core.single_type_kv_cache_manager import KVCacheSpecRegistry
from vllm.v1.kv_cache_interface import get_kv_cache_spec_kind

# config -> (max_model_len, [available bytes per rank, ...])
CASES = {"tiny-mimo-v2": (8192, [256 << 20, 1 << 30]),
         "mimo-v2-flash": (262144, [20 << 30, 60 << 30]),
         "tiny-mimo-v2-var": (8192, [256 << 20]),
         "tiny-mimo-v2-pro": (8192, [256 << 20]),
         # (fp8 in 128 x 128 blocks: the weights only; pro-fp8's fused_qkv layout)
         "mimo-v2-flash-fp8": (262144, []), "tiny-mimo-v2-fp8": (8192, []),
         "tiny-mimo-v2-pro-fp8": (8192, []),
         # (12 sliding query heads, 6 KV heads: TP 4 and 8 split neither)
         "tiny-mimo-v2-swa-heads": (8192, [])}
# config -> {TP: [available bytes per rank, ...]}: planned with rank 0's specs at that TP
# (Flash at TP 8: 1,568,244,982 is 80 GiB x 0.92 less its rank's weights and buffers)
# (fp8 at TP 8: 39,999,652,726 the same way, its fp8 weights)
TP_CASES = {"mimo-v2-flash": {8: [1568244982, 20 << 30]}, "tiny-mimo-v2": {4: [256 << 20]},
            "mimo-v2-flash-fp8": {8: [39999652726]}}
TPS = (1, 2, 4, 8)
FIELDS = ("block_size", "num_kv_heads", "head_size", "tokens_per_state", "sliding_window",
          "alignment", "state_content_bytes", "cache_dtype_str", "max_tp_shards",
          "model_version", "head_size_v", "page_size_padded", "page_size_bytes",
          "real_page_size_bytes")


def spec_row(name, s):
    row = {"name": name, "type": type(s).__name__, "dtype": b.rc.rdm.dt(s.dtype),
           "block_stride_alignment": repr(s.block_stride_alignment)}
    for f in FIELDS:
        row[f] = getattr(s, f, None)
    return row


def planning(vc, specs, available):
    """The engine core's road (v1/engine/core.py): the layout resolved from the backends the
    layers name, vLLM's global groups, then get_kv_cache_configs on ``available`` bytes."""
    built_block_size = vc.cache_config.block_size
    with set_current_vllm_config(vc):
        backends = get_current_attn_backends(vc)
        names = [lay.name for lay in get_supported_kv_cache_layouts(backends)]
        vc.cache_config.kv_cache_layout = None
        layout = resolve_kv_cache_layout(vc, [names], list(specs.values()))
        vc.cache_config.kv_cache_layout = layout.name
        groups = P.get_global_kv_cache_groups(vc, [specs])
        try:
            kc = P.get_kv_cache_configs(vc, [specs], [available], groups)[0]
        except ValueError as e:         # (too little memory: vLLM's message kept)
            return {"available": available, "refused": textwrap.wrap(str(e), 90)}
        tokens, _ = get_kv_cache_capacity(vc, kc)
        # the scheduler's config (each group's first spec) and the block size the engine core
        # gives the cache config: the smallest prefix-cacheable group's (core.py:334-352)
        sc = generate_scheduler_kv_cache_config([kc])
        vc.cache_config.block_size = min(g.kv_cache_spec.block_size for g in sc.kv_cache_groups
                                         if g.kv_cache_spec.prefix_cacheable)
        sched_bs, hash_bs = resolve_kv_cache_block_sizes(sc, vc)
        # (the manager class each group gets, as get_manager_for_kv_cache_spec looks it up)
        managers = [KVCacheSpecRegistry.get_manager_class(g.kv_cache_spec, g.role).__name__
                    for g in sc.kv_cache_groups]
        alignment = resolve_cache_hit_alignment_tokens(sc, vc, sched_bs, hash_bs)
        vc.cache_config.block_size = built_block_size
        return {"available": available, "layout": layout.name,
                "backends": sorted(x.get_name() for x in backends),
                "max_num_batched_tokens": vc.scheduler_config.max_num_batched_tokens,
                "max_in_flight_tokens": vc.max_in_flight_tokens,
                "groups": [{"layers": list(g.layer_names),
                            "spec": type(g.kv_cache_spec).__name__,
                            "block_size": g.kv_cache_spec.block_size,
                            "kind": get_kv_cache_spec_kind(g.kv_cache_spec).value,
                            "page_size_bytes": g.kv_cache_spec.page_size_bytes}
                           for g in kc.kv_cache_groups],
                "tensors": [{"size": t.size, "layers": len(t.layers), "offset": t.offset,
                             "layer_stride": t.layer_stride, "block_stride": t.block_stride}
                            for t in kc.kv_cache_tensors],
                "managers": managers, "scheduler_block_size": sched_bs,
                "hash_block_size": hash_bs,
                "engine_block_size": min(g.kv_cache_spec.block_size
                                         for g in sc.kv_cache_groups),
                "cache_hit_alignment_tokens": alignment,
                "num_blocks": kc.num_blocks, "kv_cache_tokens": tokens,
                "max_concurrency": get_max_concurrency_for_kv_cache_config(vc, kc)}


def weights(model, detail=False):
    """A rank's parameters and buffers; with `detail` (rank 0) also by name, layer indices
    folded (model.layers.*.x): each name's numel and dtype, each buffer's bytes."""
    params = list(model.parameters())
    out = {"param_numel": sum(p.numel() for p in params),
           "param_bytes_by_dtype": b.rc.by_dtype(params),
           "buffer_bytes_by_dtype": b.rc.by_dtype(list(model.buffers()))}
    if detail:
        out["param_numel_by_name"] = b.rc.pattern_numel(model)
        out["dtype_by_name"] = {re.sub(r"\.layers\.\d+\.", ".layers.*.", n): b.rc.rdm.dt(p.dtype)
                                for n, p in model.named_parameters()}
        out["buffer_bytes_by_name"] = {n: t.numel() * t.element_size()
                                       for n, t in model.named_buffers()}
        out["scratch"] = scratch(model)
    return out


def scratch(model):
    """Plain tensors the modules keep (neither parameter nor buffer; allocated on the GPU as
    the model is built, so in vLLM's weights memory): the first name of each, its shape and
    dtype (max_num_batched_tokens here: VllmConfig's default, see planning rows)."""
    out, seen = {}, set()
    for mname, mod in model.named_modules():
        for attr, t in vars(mod).items():
            if (isinstance(t, b.torch.Tensor) and not isinstance(t, b.torch.nn.Parameter)
                    and t.numel() and id(t) not in seen):
                seen.add(id(t))
                out[re.sub(r"\.layers\.\d+\.", ".layers.*.", f"{mname}.{attr}")] = {
                    "shape": list(t.shape), "dtype": b.rc.rdm.dt(t.dtype),
                    "bytes": t.numel() * t.element_size()}
    return out


def record(name):
    cfg = json.loads((HERE / f"{name}.config.json").read_text())
    mml, availables = CASES[name]
    mc = b.model_config(cfg, mml)
    model, vc, specs = b.build(mc)
    out = {"class": type(model).__name__, "module": type(model).__module__,
           "max_model_len": mml, "block_size": vc.cache_config.block_size,
           "cache_dtype": vc.cache_config.cache_dtype,
           "specs": [spec_row(n, s) for n, s in specs.items()],
           "planning": [planning(vc, specs, a) for a in availables],
           "param_numel_by_name": b.rc.pattern_numel(model), "tp": {}}
    del model
    for tp, tp_availables in TP_CASES.get(name, {}).items():
        model, vc, specs = b.build(b.model_config(cfg, mml), tp, 0)
        out.setdefault("tp_planning", {})[str(tp)] = {
            "specs": [spec_row(n, s) for n, s in specs.items()],
            "planning": [planning(vc, specs, a) for a in tp_availables]}
        del model
    for tp in TPS:
        ranks = []
        for rank in range(tp):
            t0 = time.perf_counter()
            try:
                ranks.append(weights(b.build(b.model_config(cfg, mml), tp, rank)[0],
                                     detail=rank == 0))
            except Exception as e:       # vLLM's own refusal (a head count TP does not divide)
                ranks.append({"refused": f"{type(e).__name__}: {e}"[:400]})
            print(name, f"TP {tp} rank {rank}", f"{time.perf_counter() - t0:.1f} s",
                  file=sys.stderr, flush=True)
            if "refused" in ranks[-1]:
                break
        out["tp"][str(tp)] = ranks
    return out


def main():
    b.rc.rqn.rmm_main_env()
    b.install()
    path = HERE / "answers.json"
    answers = json.loads(path.read_text()) if path.exists() else {"cases": {}}
    answers["substitutions"] = b.SUBSTITUTIONS
    for name in sys.argv[1:] or list(CASES):
        answers["cases"][name] = record(name)
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
