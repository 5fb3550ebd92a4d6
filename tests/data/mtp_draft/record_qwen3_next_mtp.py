"""Record what vLLM 0.33 builds for Qwen3-Next's MTP draft (method "mtp", `Qwen3NextMTP`):
its parameters kept after the sharing with the target, the draft's KV cache layer, the
target's Gated DeltaNet MambaSpec with ``num_speculative_tokens`` K, and the KV cache groups
vLLM plans for target + draft (-> qwen3_next_answers.json).

A development tool, never run by the tests (every module on the meta device, no weights).
From the project root:

    ulimit -v 12000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs \\
        timeout 900 \\
        ~/.cache/vllm-oracle/venv/bin/python tests/data/mtp_draft/record_qwen3_next_mtp.py

It imports record_mtp_models.py (and through it ../eagle_draft/record_draft_models.py) for
the recording helpers and substitutions, names FLASH_ATTN again (these layers are not MLA),
and makes the Gated DeltaNet layers FlashInfer's (what vLLM picks on Hopper, what kvcli
sizes): README.md says what is vLLM's own code and what is substituted.
"""
# ruff: noqa
import importlib.util, json, sys, time, traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("record_mtp_models", HERE / "record_mtp_models.py")
rmm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rmm)                   # vLLM imported, every substitution applied
rdm = rmm.rdm

import torch
import vllm
from vllm.config import (CacheConfig, DeviceConfig, LoadConfig, ModelConfig, ParallelConfig,
                         SpeculativeConfig, VllmConfig, set_current_vllm_config)
from vllm.config.vllm import get_layers_from_vllm_config
from vllm.model_executor.layers.attention_layer_base import AttentionLayerBase
from vllm.model_executor.layers.mamba import abstract
from vllm.model_executor.layers.mamba.gdn import qwen_gdn_linear_attn as gdn
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.platforms import current_platform
from vllm.platforms.interface import Platform
from vllm.utils.torch_utils import set_default_torch_dtype
from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend
from vllm.v1.attention.backends.gdn_attn import FLASHINFER_GDN_CHECKPOINT_ALIGNMENT
from vllm.v1.attention.backends.registry import AttentionBackendEnum
from vllm.v1.core.kv_cache_planning import get_global_kv_cache_groups
from vllm.v1.kv_cache_interface import MambaSpec
from vllm.v1.worker.gpu import attn_utils

BACKEND = AttentionBackendEnum.FLASH_ATTN
current_platform.get_attn_backend_cls = lambda *a, **k: BACKEND.get_path()
SUBSTITUTIONS = [s for s in rmm.SUBSTITUTIONS if "MLA" not in s and "compute_units" not in s]
SUBSTITUTIONS.append("attention backend: FLASH_ATTN named for the CPU's unspecified platform "
                     "(SM90's first for these bf16 full-attention layers)")
# The GDN prefill kernel is chosen per platform (qwen_gdn_linear_attn.py:243-267): FlashInfer
# on Hopper, Triton on a CPU. kvcli sizes Hopper's: each built GDN layer is given FlashInfer's
# checkpoint alignment (the attribute its __init__ sets on Hopper, :691-699), and
# get_mamba_prefill_checkpoint_alignment (which reads the built layers) answers it for the
# platform's block-size alignment, which runs before any layer is built.
abstract.get_mamba_prefill_checkpoint_alignment = lambda vc: FLASHINFER_GDN_CHECKPOINT_ALIGNMENT
gdn.get_mamba_prefill_checkpoint_alignment = abstract.get_mamba_prefill_checkpoint_alignment
SUBSTITUTIONS.append("GDN layers: FlashInfer's prefill checkpoint alignment (64) set on each "
                     "built layer, as on Hopper (the CPU picks Triton's kernel)")
SUBSTITUTIONS.append("Platform._align_hybrid_block_size(FlashAttentionBackend) called as "
                     "CudaPlatform.check_and_update_config calls it (the CPU's platform does not)")
# The GDN layer's gated norm is made on the platform's device (qwen_gdn_linear_attn.py:672),
# which the CPU's unspecified platform cannot name: the meta device, as every other tensor here.
current_platform.current_device = lambda: torch.device("meta")
SUBSTITUTIONS.append("current_device(): meta (the GDN gated norm's weight is made on it)")
# VllmConfig turns the hybrid KV cache manager off on platforms without it (config/vllm.py:
# 2232-2234); CudaPlatform supports it, as a GPU serving Qwen3-Next needs.
current_platform.support_hybrid_kv_cache = lambda: True
SUBSTITUTIONS.append("support_hybrid_kv_cache(): true (CudaPlatform's answer)")
KS = (1, 3)                                      # num_speculative_tokens recorded
TINY = {"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next",
        "attention_bias": False, "decoder_sparse_step": 1, "full_attention_interval": 4,
        "head_dim": 32, "hidden_act": "silu", "hidden_size": 64, "intermediate_size": 128,
        "linear_conv_kernel_dim": 4, "linear_key_head_dim": 16, "linear_num_key_heads": 2,
        "linear_num_value_heads": 4, "linear_value_head_dim": 16,
        "max_position_embeddings": 4096, "mlp_only_layers": [], "moe_intermediate_size": 32,
        "norm_topk_prob": True, "num_attention_heads": 4, "num_experts": 4,
        "num_experts_per_tok": 2, "num_hidden_layers": 4, "num_key_value_heads": 2,
        "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-06, "rope_scaling": None,
        "rope_theta": 10000, "shared_expert_intermediate_size": 32,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 1000}
CASES = ["3-qwen3-next-80b-a3b", "4-tiny-qwen3-next", "5-tiny-qwen3-next-2-mtp"]


def target_dir(case):
    """config.json: case 3 kvcli's preset as typed in, case 4 TINY, case 5 TINY with two MTP
    modules (``num_nextn_predict_layers`` 2) (written once)."""
    d = HERE / case / "target"
    if not (d / "config.json").exists():
        d.mkdir(parents=True, exist_ok=True)
        if case == "3-qwen3-next-80b-a3b":
            sys.path.insert(0, str(HERE.parents[2]))
            from kvcore.models.presets import PRESETS
            cfg = PRESETS["qwen3-next-80b-a3b"][1]
        else:
            cfg = dict(TINY, **({"num_nextn_predict_layers": 2} if case.startswith("5-") else {}))
        (d / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    return d


def configs(d, k):
    mc = ModelConfig(model=str(d), skip_tokenizer_init=True, seed=0, max_model_len=4096)
    pc = ParallelConfig()
    sc = SpeculativeConfig(method="mtp", num_speculative_tokens=k, target_model_config=mc,
                           target_parallel_config=pc)
    vc = VllmConfig(model_config=mc, parallel_config=pc, speculative_config=sc,
                    cache_config=CacheConfig(enable_prefix_caching=True),
                    device_config=DeviceConfig(device="cpu"),
                    load_config=LoadConfig(load_format="dummy", device="meta"))
    Platform._align_hybrid_block_size(vc, FlashAttentionBackend)
    return mc, sc, vc


def build(case, k, with_params):
    d = target_dir(case)
    t0 = time.perf_counter()
    mc, sc, vc = configs(d, k)
    dm, cc = sc.draft_model_config, vc.cache_config
    hf = dm.hf_config
    rec = {"method": sc.method, "num_speculative_tokens": sc.num_speculative_tokens,
           "draft_model_is_target": sc.model == mc.model,
           "target": {"architectures": list(mc.architectures), "dtype": rdm.dt(mc.dtype)},
           "draft": {"architectures": list(dm.architectures), "dtype": rdm.dt(dm.dtype),
                     "model_type": hf.model_type, "n_predict": getattr(hf, "n_predict", None),
                     "num_nextn_predict_layers": getattr(hf, "num_nextn_predict_layers",
                                                         "(absent)"),
                     "use_multi_module_mtp": sc.use_multi_module_mtp()},
           "cache": {"block_size": cc.block_size, "mamba_block_size": cc.mamba_block_size,
                     "mamba_page_size_padded": cc.mamba_page_size_padded,
                     "mamba_cache_mode": cc.mamba_cache_mode,
                     "enable_prefix_caching": cc.enable_prefix_caching},
           "disable_hybrid_kv_cache_manager":
               vc.scheduler_config.disable_hybrid_kv_cache_manager,
           "vllm_config_num_speculative_tokens": vc.num_speculative_tokens,
           "attention_backend": BACKEND.name + " (substituted; see README)"}
    with set_current_vllm_config(vc), set_default_torch_dtype(mc.dtype), torch.device("meta"):
        target = initialize_model(vc)
    rec["target"]["class"] = type(target).__name__
    if with_params:
        rec["target"]["param_numel"] = sum(p.numel() for p in target.parameters())
        rec["target"]["param_bytes_by_dtype"] = rmm._bytes(target.parameters())
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
    for layer in all_layers.values():                # FlashInfer's GDN kernel (see above)
        if isinstance(layer, gdn.QwenGatedDeltaNetAttention):
            layer._checkpoint_alignment = FLASHINFER_GDN_CHECKPOINT_ALIGNMENT
    specs = attn_utils.get_kv_cache_spec(vc)
    rec["kv_specs_draft"] = {n: rdm.spec_json(specs[n]) for n in sorted(draft_names)
                             if n in specs}
    kinds = {}
    for n in sorted(target_names):
        if n in specs:
            j = json.dumps(rdm.spec_json(specs[n]), sort_keys=True)
            kinds.setdefault(j, []).append(n)
    rec["kv_specs_target"] = [{"layers": ls, "spec": json.loads(j)} for j, ls in kinds.items()]
    rec["mamba_max_memory_usage_pages"] = sorted({
        s.max_memory_usage_bytes(vc) // s.page_size_bytes for s in specs.values()
        if isinstance(s, MambaSpec)})
    rec["mamba_max_num_blocks_per_req_at_4096"] = sorted({
        s.max_num_blocks_per_req(vc, 4096) for s in specs.values() if isinstance(s, MambaSpec)})
    # the engine core resolves one layout before planning (v1/engine/core.py:283-290), from
    # what every backend the worker built supports (worker_base.py:107-110)
    from vllm.distributed.kv_transfer.kv_connector.utils import get_current_attn_backends
    from vllm.v1.attention.backends.utils import (get_supported_kv_cache_layouts,
                                                  resolve_kv_cache_layout)
    supported = [m.name for m in get_supported_kv_cache_layouts(get_current_attn_backends(vc))]
    rec["kv_cache_layout"] = resolve_kv_cache_layout(vc, [supported], specs.values()).name
    rec["kv_cache_groups"] = [
        {"layers": list(g.layer_names), "spec_type": type(g.kv_cache_spec).__name__,
         "block_size": g.kv_cache_spec.block_size,
         "page_size_bytes": g.kv_cache_spec.page_size_bytes,
         "draft_layers": sorted(set(g.layer_names) & draft_names),
         "is_eagle_group": g.is_eagle_group}
        for g in get_global_kv_cache_groups(vc, [specs])]
    rec["use_eagle_block_drop"] = sc.use_eagle_block_drop()
    print(case, k, f"target {t1 - t0:.1f} s, draft {time.perf_counter() - t1:.1f} s",
          file=sys.stderr)
    return rec


def main():
    rmm_main_env()
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
    (HERE / "qwen3_next_answers.json").write_text(json.dumps(answers, indent=1) + "\n")


def rmm_main_env():
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


if __name__ == "__main__":
    main()
