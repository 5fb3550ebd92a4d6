"""Record what vLLM 0.33 builds for an MTP draft (method "mtp", DeepSeek-V3's multi-token
prediction module): its parameters and buffers (quantized ones included, with dtypes), what
it shares with the target at load, the MTP layer's KV cache spec and the KV cache groups
(-> answers.json).

A development tool, never run by the tests: it imports the real vLLM from the oracle's
environment and needs no weights (every module is built on the meta device). From the
project root:

    ulimit -v 12000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src timeout 900 \\
        ~/.cache/vllm-oracle/venv/bin/python tests/data/mtp_draft/record_mtp_models.py

It imports ../eagle_draft/record_draft_models.py for its recording helpers (`tensors`,
`spec_json`) and its substitutions, then names an MLA backend instead of FLASH_ATTN.
README.md says what is vLLM's own code and what is substituted.
"""
# ruff: noqa
import importlib.util, json, os, sys, time, traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_draft_models", HERE.parent / "eagle_draft" / "record_draft_models.py")
rdm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rdm)                   # vLLM imported, its substitutions applied

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

K = 1                                             # num_speculative_tokens (DeepSeek's n_predict)
# record_draft_models names FLASH_ATTN; these layers are MLA. CudaPlatform puts FLASH_ATTN_MLA
# first for MLA on an H100 (SM90, platforms/cuda.py:138-149), but its module needs
# flash_attn_varlen_func, absent on this CPU; TRITON_MLA (4th) imports and gives the same spec:
# both declare kernel block sizes [MultipleOf(16)] and neither customizes the spec
# (backends/mla/flashattn_mla.py:49-50, triton_mla.py:114-115; v1/worker/utils.py:476-486).
BACKEND = AttentionBackendEnum.TRITON_MLA
current_platform.get_attn_backend_cls = lambda *a, **k: BACKEND.get_path()
SUBSTITUTIONS = [s.replace("FLASH_ATTN named for the CPU's unspecified platform",
                           "TRITON_MLA named for the CPU's unspecified platform (same spec as "
                           "SM90's first MLA backend FLASH_ATTN_MLA, which cannot import here)")
                 for s in rdm.SUBSTITUTIONS]
# TRITON_MLA's impl asks the platform for its SM count (triton_mla.py:231), which the CPU's
# unspecified platform cannot answer: an H100 SXM's 132. It sizes a kernel's split, no tensor.
current_platform.num_compute_units = lambda *a, **k: 132
SUBSTITUTIONS.append("num_compute_units: 132 (an H100 SXM's SMs; TRITON_MLA's impl asks)")
# MLAAttention also picks a prefill backend (mla_attention.py:633); the platform default,
# FLASH_ATTN's (platforms/interface.py:459-460, SM90's pick too), cannot import here: the CPU
# SDPA one stands in. A prefill backend holds no parameter, buffer or KV spec.
from vllm.v1.attention.backends.mla.prefill.registry import MLAPrefillBackendEnum
current_platform.get_mla_prefill_backend_cls = lambda *a, **k: MLAPrefillBackendEnum.CPU.get_class()
SUBSTITUTIONS.append("MLA prefill backend: CPU SDPA for FLASH_ATTN's (cannot import here)")
# FusedMoE picks its kernel backend by platform (fused_moe/oracle/unquantized.py:62-106,
# fp8.py:79-145); the unspecified platform matches none and raises. The platform answers
# is_cpu() (its CPU kernels) while the MoE layers are built: a kernel choice, not a shape.
if os.environ.get("MTP_RECORD_MOE_AS_CPU", "1") == "1":
    current_platform.is_cpu = lambda: True
    SUBSTITUTIONS.append("is_cpu(): true, so FusedMoE picks a CPU kernel backend")
# The loader's weight post-processing (model_loader/base_loader.py:109) repacks weights for
# the chosen kernels (the CPU MoE prepack needs vllm._C, absent); on a GPU it would repack for
# the GPU's kernels instead. Skipped: the tensors recorded are those the modules' constructors
# and quant methods' create_weights make, i.e. what the checkpoint is loaded into.
from vllm.model_executor.model_loader import base_loader
base_loader.process_weights_after_loading = lambda *a, **k: None
SUBSTITUTIONS.append("process_weights_after_loading skipped: tensors as created, "
                     "before any kernel-specific repacking")
CASES = ["1-deepseek-v3", "2-tiny-deepseek-v3"]


def preset_config(case):
    """config.json for case 1 from kvcli's preset, case 2 from ../sched_spec_mtp (written once)."""
    d = HERE / case / "target"
    if not (d / "config.json").exists():
        d.mkdir(parents=True, exist_ok=True)
        if case == "1-deepseek-v3":
            sys.path.insert(0, str(HERE.parents[2]))
            from kvcore.models.presets import PRESETS
            cfg = PRESETS["deepseek-v3"][1]
        else:
            cfg = json.loads((HERE.parent / "sched_spec_mtp/tiny-deepseek-v3/config.json")
                             .read_text())
        (d / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    return d


def build(case):
    d = preset_config(case)
    t0 = time.perf_counter()
    mc = ModelConfig(model=str(d), skip_tokenizer_init=True, seed=0)
    pc = ParallelConfig()
    sc = SpeculativeConfig(method="mtp", num_speculative_tokens=K, target_model_config=mc,
                           target_parallel_config=pc)
    vc = VllmConfig(model_config=mc, parallel_config=pc, speculative_config=sc,
                    device_config=DeviceConfig(device="cpu"),
                    load_config=LoadConfig(load_format="dummy", device="meta"))
    dm = sc.draft_model_config
    q = vc.quant_config
    rec = {"method": sc.method, "num_speculative_tokens": sc.num_speculative_tokens,
           "draft_model_is_target": sc.model == mc.model,
           "quantization": {"target": mc.quantization, "draft": dm.quantization,
                            "spec_config": sc.quantization,
                            "quant_config": type(q).__name__ if q else None,
                            "weight_block_size": getattr(q, "weight_block_size", None)},
           "target": {"architectures": list(mc.architectures), "dtype": rdm.dt(mc.dtype),
                      "max_model_len": mc.max_model_len, "use_mla": mc.use_mla},
           "draft": {"architectures": list(dm.architectures), "dtype": rdm.dt(dm.dtype),
                     "model_type": dm.hf_config.model_type, "max_model_len": dm.max_model_len,
                     "n_predict": getattr(dm.hf_config, "n_predict", None),
                     "num_nextn_predict_layers": dm.hf_config.num_nextn_predict_layers,
                     "use_multi_module_mtp": sc.use_multi_module_mtp()},
           "cache_block_size": vc.cache_config.block_size,
           "attention_backend": BACKEND.name + " (substituted; see README)"}
    # The target first, as the V2 runner loads it (its 61 MLA layers register first).
    with set_current_vllm_config(vc), set_default_torch_dtype(mc.dtype), torch.device("meta"):
        target = initialize_model(vc)
    rec["target"]["class"] = type(target).__name__
    rec["target"]["param_numel"] = sum(p.numel() for p in target.parameters())
    rec["target"]["param_bytes_by_dtype"] = _bytes(target.parameters())
    rec["seconds_to_build_target"] = None       # filled below (not compared: machine-dependent)
    t1 = time.perf_counter()
    target_names = set(get_layers_from_vllm_config(vc, AttentionLayerBase))
    # The V2 runner's MTP load path: MTPSpeculator.load_draft_model -> load_eagle_model
    # (v1/worker/gpu/spec_decode/mtp/speculator.py:15-19, eagle/utils.py:80-147), real; a spy
    # on get_model records the draft as built, before the sharing replaces anything.
    draft, built = rdm.load_draft_spied(target, vc)
    rec["draft"]["class"] = type(draft).__name__
    rec["params"] = built["before"]
    tmods = {id(m): n for n, m in target.named_modules()}
    tparams = {id(p) for p in target.parameters()}
    after = rdm.tensors(draft, target)
    rec["after_load_sharing"] = {
        "has_own_flags_after_dummy_load": built["flags"],
        "modules_now_the_targets": {n: tmods[id(m)] for n, m in draft.named_modules()
                                    if n and id(m) in tmods and not any(
                                        n.startswith(p + ".") and id(draft.get_submodule(p))
                                        in tmods for p in _parents(n))},
        "param_numel_not_the_targets": sum(p.numel() for p in draft.parameters()
                                           if id(p) not in tparams),
        "param_bytes_by_dtype_not_the_targets": _bytes(p for p in draft.parameters()
                                                       if id(p) not in tparams),
        "numel_by_group_after": after["numel_by_group"]}
    # Speculator.load_model: the new attention layers are the draft's (speculator.py:225-242).
    all_layers = get_layers_from_vllm_config(vc, AttentionLayerBase)
    draft_names = set(all_layers) - target_names
    for n in draft_names:
        all_layers[n].is_draft_layer = True
    specs = attn_utils.get_kv_cache_spec(vc)
    tspecs = [specs[n] for n in sorted(target_names) if n in specs]
    rec["kv_specs"] = {n: dict(rdm.spec_json(specs[n]), draft_layer=True)
                       for n in sorted(draft_names) if n in specs}
    rec["kv_specs_target_summary"] = {
        "num_layers": len(tspecs), "first": rdm.spec_json(tspecs[0]),
        "all_equal": all(s == tspecs[0] for s in tspecs),
        "draft_specs_equal_target_spec": {n: specs[n] == tspecs[0] for n in sorted(draft_names)}}
    rec["kv_specs_source"] = "vllm/v1/worker/gpu/attn_utils.py get_kv_cache_spec(vllm_config)"
    rec["kv_cache_groups"] = [
        {"num_layers": len(g.layer_names), "spec": rdm.spec_json(g.kv_cache_spec),
         "draft_layers": sorted(set(g.layer_names) & draft_names),
         "is_eagle_group": g.is_eagle_group}
        for g in get_global_kv_cache_groups(vc, [specs])]
    rec["use_eagle_block_drop"] = sc.use_eagle_block_drop()
    rec["enable_prefix_caching"] = vc.cache_config.enable_prefix_caching
    rec["use_v2_model_runner"] = vc.use_v2_model_runner
    rec.pop("seconds_to_build_target")
    print(case, f"target {t1 - t0:.1f} s, draft {time.perf_counter() - t1:.1f} s", file=sys.stderr)
    return rec


def _parents(name):
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _bytes(params):
    out = {}
    for p in params:
        out[rdm.dt(p.dtype)] = out.get(rdm.dt(p.dtype), 0) + p.numel() * p.element_size()
    return out


def main():
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
    answers = {"vllm_version": vllm.__version__, "torch": torch.__version__,
               "substitutions": SUBSTITUTIONS, "cases": {}}
    for case in sys.argv[1:] or CASES:
        try:
            answers["cases"][case] = build(case)
        except (ValueError, NotImplementedError) as e:   # vLLM refused: record its words
            answers["cases"][case] = {"refused": f"{type(e).__name__}: {e}",
                                      "traceback_tail": traceback.format_exc().splitlines()[-6:]}
        print(case, "refused" if "refused" in answers["cases"][case] else "ok", file=sys.stderr)
    (HERE / "answers.json").write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
