# ruff: noqa
"""Dev tool (not a test): vLLM 0.33's answers for gen.py's cases -> a JSON line each.

Per case: vLLM's own model class built by `initialize_model` on the meta device at the case's
TP (rank 0), with its --kv-cache-dtype, --max-model-len and --block-size as `vllm serve`
passes them (ModelConfig, CacheConfig), the KV cache specs the GPU runner collects, the
parameters rank 0 holds by dtype, and vLLM's KV cache groups and blocks on the case's available
bytes (`get_global_kv_cache_groups` + `get_kv_cache_configs`, as the engine core plans them);
or where vLLM refused (its words). The build is ../kv_spec_census/record_kv_specs.py's
(imported: every substitution it and ../weights_census/record_census.py make, listed in their
answers.json), with the case's options. From the project root:

    R=~/.cache/vllm-oracle; ulimit -v 16000000
    HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        flock /tmp/vllm-build.lock nice -n 19 $R/venv/bin/python \\
        tests/data/size_fuzz/record.py CASES.jsonl ANSWERS.jsonl [FIRST LAST]

Cases already in ANSWERS.jsonl are skipped (a rerun resumes); FIRST LAST: a slice of CASES.
"""
import importlib.util, json, signal, sys, tempfile, textwrap, time, traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_kv_specs", HERE.parent / "kv_spec_census" / "record_kv_specs.py")
rks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rks)                   # vLLM imported, the census's substitutions
rc = rks.rc

import torch
import new_classes                             # (after vLLM's import: the census's)
from vllm.config import (CacheConfig, DeviceConfig, KernelConfig, LoadConfig, ModelConfig,
                         ParallelConfig, VllmConfig, set_current_vllm_config)
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.platforms import current_platform
from vllm.platforms.interface import Platform
from vllm.utils.torch_utils import set_default_torch_dtype
from vllm.v1.attention.backends.registry import AttentionBackendEnum
from vllm.v1.core import kv_cache_planning as P
from vllm.v1.kv_cache_interface import get_kv_cache_spec_kind
from vllm.v1.worker.gpu import attn_utils

TIMEOUT_S = 90
# --kv-cache-dtype fp8 on FLASH_ATTN: the layer asks whether the FlashAttention version the
# platform has takes an fp8 cache (none on the CPU's platform); an H100's FA3 does
# (fa_utils.py:282-312; with ALiBi, where FA3 does not apply, an H100 picks another backend
# that takes it, the spec the same)
from vllm.v1.attention.backends import flash_attn as _fa
_fa.flash_attn_supports_kv_cache_dtype = lambda *a, **k: True
SUBSTITUTIONS = ["every one of ../kv_spec_census/record_kv_specs.py's (its answers.json)",
                 "FLASH_ATTN: flash_attn_supports_kv_cache_dtype() true (FA3 on an H100)",
                 "KV cache layout NHD (FLASH_ATTN's on an H100; it orders a tensor's strides, "
                 "no size)"] + new_classes.SUBSTITUTIONS


def refusal(e):
    return {"refused": f"{type(e).__name__}: {e}"[:800],
            "traceback_tail": traceback.format_exc().splitlines()[-4:]}


def vllm_config(cfg, opts):
    tmp = Path(tempfile.mkdtemp())
    (tmp / "config.json").write_text(json.dumps(cfg))
    mc = ModelConfig(model=str(tmp), skip_tokenizer_init=True, seed=0, trust_remote_code=False,
                     max_model_len=opts["max_model_len"])
    # (`vllm serve`'s default: prefix caching where the model supports it, arg_utils.py:3075;
    # the TP size in the parallel config, which the hybrid alignment's Mamba page reads)
    cache = {"enable_prefix_caching": mc.is_prefix_caching_supported,
             "cache_dtype": opts["kv_cache_dtype"]}
    if opts["block_size"] is not None:
        cache["block_size"] = opts["block_size"]
    # (Kimi Linear's recorder: no JIT warm-up, which builds no tensor)
    kimi = "kimi" in mc.hf_config.model_type
    kernel = {"kernel_config": KernelConfig(enable_jit_warmup=False)} if kimi else {}
    return mc, VllmConfig(model_config=mc, **kernel,
                          parallel_config=ParallelConfig(tensor_parallel_size=opts["tp"]),
                          cache_config=CacheConfig(**cache),
                          device_config=DeviceConfig(device="cpu"),
                          load_config=LoadConfig(load_format="dummy", device="meta"))


def build(cfg, opts):
    """record_kv_specs.build's road at the case's options and TP (rank 0)."""
    mc, vc = vllm_config(cfg, opts)
    sparse = mc.use_mla and hasattr(mc.hf_text_config, "index_topk")
    backend = (AttentionBackendEnum.FLASH_ATTN_MLA_SPARSE if sparse
               else AttentionBackendEnum.TRITON_MLA if mc.use_mla
               else AttentionBackendEnum.FLASH_ATTN)
    current_platform.get_attn_backend_cls = (
        new_classes.install((cfg.get("architectures") or [""])[0])
        or (lambda *a, **k: backend.get_path()))
    rc.set_tp(opts["tp"], 0)
    try:
        with set_current_vllm_config(vc), set_default_torch_dtype(mc.dtype), torch.device("meta"):
            model = initialize_model(vc)
            if mc.is_hybrid:
                # The worker's order (v1/executor/uniproc_executor.py, multiproc_executor.py):
                # load_model, then the platform's pass, which aligns a hybrid's block only
                # where it finds an attention backend that is not an SSM one (a class cut to
                # Mamba layers alone: none; its Mamba block stays the configured one). The
                # checkpoint alignment as before: FlashInfer's 64 for GDN, 1 for the others.
                gdn = getattr(mc.hf_text_config, "model_type", "") in rks.GDN_TYPES
                rks.abstract.get_mamba_prefill_checkpoint_alignment = (
                    rks._gdn_alignment if gdn else lambda vc: 1)
                try:
                    Platform.update_block_size_for_backend(vc)
                finally:
                    rks.abstract.get_mamba_prefill_checkpoint_alignment = rks._gdn_alignment
            elif sparse:
                Platform.update_block_size_for_backend(vc)
            specs = attn_utils.get_kv_cache_spec(vc)
            shared = attn_utils.get_shared_kv_cache_layers(vc)
    finally:
        rc.set_tp(1, 0)
    params = list(model.parameters())
    out = {"class": type(model).__name__, "dtype": rc.rdm.dt(mc.dtype),
           "max_model_len": mc.max_model_len, "block_size": vc.cache_config.block_size,
           "use_mla": mc.use_mla, "is_hybrid": mc.is_hybrid,
           "specs": [rks.spec_json(n, s) for n, s in specs.items()],
           "kv_sharing": dict(shared),
           "rank0": {"param_numel": sum(p.numel() for p in params),
                     "param_bytes_by_dtype": rc.by_dtype(params),
                     "param_numel_by_name": rc.pattern_numel(model)}}
    del model, params
    return vc, specs, out


def planning(vc, specs, available):
    vc.cache_config.kv_cache_layout = "NHD"
    with set_current_vllm_config(vc):
        try:
            groups = P.get_global_kv_cache_groups(vc, [specs])
            kc = P.get_kv_cache_configs(vc, [specs], [available], groups)[0]
        except (ValueError, AssertionError, NotImplementedError) as e:
            return {"refused": textwrap.shorten(f"{type(e).__name__}: {e}", 800)}
    return {"num_blocks": kc.num_blocks,
            "groups": [{"layers": list(g.layer_names), "spec": type(g.kv_cache_spec).__name__,
                        "kind": get_kv_cache_spec_kind(g.kv_cache_spec).value,
                        "block_size": g.kv_cache_spec.block_size,
                        "page_size_bytes": g.kv_cache_spec.page_size_bytes}
                       for g in kc.kv_cache_groups],
            "tensor_bytes": sum(t.size for t in kc.kv_cache_tensors)}


def _alarm(*_):
    raise rks.Timeout("not built within its time bound")


def record(case):
    out = {"id": case["id"]}
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT_S)
    t0 = time.perf_counter()
    try:
        vc, specs, built = build(case["config"], case["options"])
        out.update(built)
        out["planning"] = planning(vc, specs, case["options"]["available"])
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        out.update(refusal(e))
    finally:
        signal.alarm(0)
    out["seconds"] = round(time.perf_counter() - t0, 2)
    return out


def main():
    cases_path, answers_path = Path(sys.argv[1]), Path(sys.argv[2])
    cases = [json.loads(x) for x in cases_path.read_text().splitlines()]
    if len(sys.argv) > 3:
        cases = cases[int(sys.argv[3]):int(sys.argv[4])]
    done = set()
    if answers_path.exists():
        done = {json.loads(x)["id"] for x in answers_path.read_text().splitlines()}
    rc.rqn.rmm_main_env()
    with answers_path.open("a") as f:
        for case in cases:
            if case["id"] in done:
                continue
            out = record(case)
            f.write(json.dumps(out) + "\n")
            f.flush()
            print(case["id"], case["arch"], "refused" if "refused" in out else "built",
                  out["seconds"], "s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
