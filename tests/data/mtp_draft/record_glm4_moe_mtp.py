"""Record what vLLM 0.33 builds for GLM-4.5's MTP draft (method "mtp", `Glm4MoeMTP`): the
target's parameters, the draft class, the draft's parameters kept after vLLM shares the
embedding and LM head with the target (bytes by dtype), the draft's KV cache layer and spec,
and the KV cache groups vLLM plans for target + draft at K = 1 and K = 3
(-> glm4_moe_answers.json).

A development tool, never run by the tests (every module on the meta device, no weights).
From the project root:

    ulimit -v 12000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs \\
        timeout 900 \\
        ~/.cache/vllm-oracle/venv/bin/python tests/data/mtp_draft/record_glm4_moe_mtp.py

It imports record_mtp_models.py (and through it ../eagle_draft/record_draft_models.py) for
the recording helpers and substitutions, and names FLASH_ATTN again (GLM-4.5's layers are
plain GQA attention, not MLA). README.md says what is vLLM's own code and what is substituted.
"""
# ruff: noqa
import dataclasses, importlib.util, json, sys, time, traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("record_mtp_models", HERE / "record_mtp_models.py")
rmm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rmm)                   # vLLM imported, every substitution applied
rdm = rmm.rdm

import torch
import vllm
from vllm.config import (DeviceConfig, LoadConfig, ModelConfig, ParallelConfig,
                         SpeculativeConfig, VllmConfig, set_current_vllm_config)
from vllm.config.vllm import get_layers_from_vllm_config
from vllm.model_executor.layers.attention_layer_base import AttentionLayerBase
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.platforms import current_platform
from vllm.utils.torch_utils import set_default_torch_dtype
from vllm.v1.attention.backends.registry import AttentionBackendEnum
from vllm.v1.core.kv_cache_planning import get_global_kv_cache_groups
from vllm.v1.worker.gpu import attn_utils

BACKEND = AttentionBackendEnum.FLASH_ATTN
current_platform.get_attn_backend_cls = lambda *a, **k: BACKEND.get_path()
SUBSTITUTIONS = [s for s in rmm.SUBSTITUTIONS if "MLA" not in s and "compute_units" not in s]
SUBSTITUTIONS.append("attention backend: FLASH_ATTN named for the CPU's unspecified platform "
                     "(SM90's first for these bf16 GQA layers)")
KS = (1, 3)                                      # num_speculative_tokens recorded
# A GLM-4.5-style target small enough to read: q/k norms on (GLM-4.5 and 4.6 have them),
# attention biases, partial rotary, one dense layer then MoE (4 routed + 1 shared expert),
# head_dim 32 where hidden / heads is 16, one MTP module.
TINY = {"architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe",
        "attention_bias": True, "first_k_dense_replace": 1, "head_dim": 32,
        "hidden_act": "silu", "hidden_size": 64, "intermediate_size": 128,
        "max_position_embeddings": 4096, "moe_intermediate_size": 32, "n_group": 1,
        "n_routed_experts": 4, "n_shared_experts": 1, "norm_topk_prob": True,
        "num_attention_heads": 4, "num_experts_per_tok": 2, "num_hidden_layers": 3,
        "num_key_value_heads": 2, "num_nextn_predict_layers": 1,
        "partial_rotary_factor": 0.5, "rms_norm_eps": 1e-05, "rope_scaling": None,
        "rope_theta": 1000000, "routed_scaling_factor": 1.0, "tie_word_embeddings": False,
        "topk_group": 1, "torch_dtype": "bfloat16", "use_qk_norm": True, "vocab_size": 1000}
CASES = ["6-tiny-glm4-moe", "7-glm-4.5-air", "8-tiny-glm4-moe-no-nextn-key"]


def target_dir(case):
    """config.json: case 7 kvcli's preset as typed in, case 6 TINY, case 8 TINY without
    ``num_nextn_predict_layers`` (transformers' Glm4MoeConfig default) (written once)."""
    d = HERE / case / "target"
    if not (d / "config.json").exists():
        d.mkdir(parents=True, exist_ok=True)
        if case == "7-glm-4.5-air":
            sys.path.insert(0, str(HERE.parents[2]))
            from kvcore.models.presets import PRESETS
            cfg = PRESETS["glm-4.5-air"][1]
        else:
            cfg = dict(TINY)
            if case.startswith("8-"):
                del cfg["num_nextn_predict_layers"]
        (d / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    return d


def build(case, k, with_params):
    d = target_dir(case)
    t0 = time.perf_counter()
    mc = ModelConfig(model=str(d), skip_tokenizer_init=True, seed=0, max_model_len=4096)
    pc = ParallelConfig()
    sc = SpeculativeConfig(method="mtp", num_speculative_tokens=k, target_model_config=mc,
                           target_parallel_config=pc)
    vc = VllmConfig(model_config=mc, parallel_config=pc, speculative_config=sc,
                    device_config=DeviceConfig(device="cpu"),
                    load_config=LoadConfig(load_format="dummy", device="meta"))
    dm = sc.draft_model_config
    hf = dm.hf_config
    rec = {"method": sc.method, "num_speculative_tokens": sc.num_speculative_tokens,
           "draft_model_is_target": sc.model == mc.model,
           "target": {"architectures": list(mc.architectures), "dtype": rdm.dt(mc.dtype),
                      "use_qk_norm": getattr(mc.hf_config, "use_qk_norm", None),
                      "num_nextn_predict_layers": getattr(mc.hf_config,
                                                          "num_nextn_predict_layers", None)},
           "draft": {"architectures": list(dm.architectures), "dtype": rdm.dt(dm.dtype),
                     "model_type": hf.model_type, "n_predict": getattr(hf, "n_predict", None),
                     "num_hidden_layers": hf.num_hidden_layers,
                     "use_multi_module_mtp": sc.use_multi_module_mtp()},
           "quantization": {"target": mc.quantization, "draft": dm.quantization},
           "cache_block_size": vc.cache_config.block_size,
           "attention_backend": BACKEND.name + " (substituted; see README)"}
    with set_current_vllm_config(vc), set_default_torch_dtype(mc.dtype), torch.device("meta"):
        target = initialize_model(vc)
    rec["target"]["class"] = type(target).__name__
    if with_params:
        rec["target"]["param_numel"] = sum(p.numel() for p in target.parameters())
        rec["target"]["param_bytes_by_dtype"] = rmm._bytes(target.parameters())
        rec["target"]["numel_by_group"] = rdm.tensors(target, target)["numel_by_group"] \
            if case != "7-glm-4.5-air" else None
    t1 = time.perf_counter()
    target_names = set(get_layers_from_vllm_config(vc, AttentionLayerBase))
    draft, built = rdm.load_draft_spied(target, vc, with_params)
    rec["draft"]["class"] = type(draft).__name__
    if with_params:
        rec["params"] = built["before"]
        tmods = {id(m): n for n, m in target.named_modules()}
        tparams = {id(p) for p in target.parameters()}
        rec["after_load_sharing"] = {
            "has_own_flags_after_dummy_load": built["flags"],
            "modules_now_the_targets": {
                n: tmods[id(m)] for n, m in draft.named_modules()
                if n and id(m) in tmods and not any(
                    id(draft.get_submodule(p)) in tmods for p in rmm._parents(n))},
            "param_numel_not_the_targets": sum(p.numel() for p in draft.parameters()
                                               if id(p) not in tparams),
            "param_bytes_by_dtype_not_the_targets": rmm._bytes(
                p for p in draft.parameters() if id(p) not in tparams)}
    all_layers = get_layers_from_vllm_config(vc, AttentionLayerBase)
    draft_names = set(all_layers) - target_names
    for n in draft_names:
        all_layers[n].is_draft_layer = True
    specs = attn_utils.get_kv_cache_spec(vc)
    tspecs = [specs[n] for n in sorted(target_names) if n in specs]
    rec["kv_specs_draft"] = {n: rdm.spec_json(specs[n]) for n in sorted(draft_names)
                             if n in specs}
    rec["kv_specs_target_summary"] = {
        "num_layers": len(tspecs), "first": rdm.spec_json(tspecs[0]),
        "all_equal": all(s == tspecs[0] for s in tspecs),
        "draft_specs_equal_target_spec_but_is_draft": {
            n: dataclasses.replace(specs[n], is_draft=False) == tspecs[0]
            for n in sorted(draft_names)}}
    rec["kv_cache_groups"] = [
        {"num_layers": len(g.layer_names), "spec": rdm.spec_json(g.kv_cache_spec),
         "draft_layers": sorted(set(g.layer_names) & draft_names),
         "is_eagle_group": g.is_eagle_group}
        for g in get_global_kv_cache_groups(vc, [specs])]
    rec["use_eagle_block_drop"] = sc.use_eagle_block_drop()
    print(case, k, f"target {t1 - t0:.1f} s, draft {time.perf_counter() - t1:.1f} s",
          file=sys.stderr)
    return rec


def init_env():
    """The single-process distributed setup record_mtp_models.main makes."""
    import socket
    from vllm.distributed.parallel_state import (ensure_model_parallel_initialized,
                                                 init_distributed_environment)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with set_current_vllm_config(VllmConfig(device_config=DeviceConfig(device="cpu"))):
        init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                     distributed_init_method=f"tcp://127.0.0.1:{port}")
        ensure_model_parallel_initialized(1, 1)


def main():
    init_env()
    answers = {"vllm_version": vllm.__version__, "torch": torch.__version__,
               "substitutions": SUBSTITUTIONS, "cases": {}}
    for case in sys.argv[1:] or CASES:
        for k in KS:
            key = f"{case}/K={k}"
            try:
                answers["cases"][key] = build(case, k, with_params=k == KS[0])
            except (ValueError, NotImplementedError, AssertionError, RuntimeError) as e:
                answers["cases"][key] = {"refused": f"{type(e).__name__}: {e}",
                                         "traceback_tail": traceback.format_exc()
                                         .splitlines()[-8:]}
            print(key, "refused" if "refused" in answers["cases"][key] else "ok",
                  file=sys.stderr)
    (HERE / "glm4_moe_answers.json").write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
