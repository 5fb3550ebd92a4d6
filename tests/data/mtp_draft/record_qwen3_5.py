"""Record what vLLM 0.33 builds for Qwen3.5 (dense and MoE; text-only `Qwen3_5*ForCausalLM`
and multimodal `Qwen3_5*ForConditionalGeneration`): the target's parameters, its KV cache
specs (the Gated DeltaNet MambaSpec with Qwen3.5's state dtypes, the full-attention spec), the
hybrid block size and vLLM's KV cache groups without speculative decoding (K=0) and with
method "mtp" (`Qwen3_5MTP` / `Qwen3_5MoeMTP`) at K=1 and 3, with the draft's parameters kept
after the sharing with the target (-> qwen3_5_answers.json).

A development tool, never run by the tests (every module on the meta device, no weights).
From the project root:

    ulimit -v 12000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 1800 \\
        ~/.cache/vllm-oracle/venv/bin/python tests/data/mtp_draft/record_qwen3_5.py

It reuses record_qwen3_next_mtp.py's substitutions (README.md), its `build` for K >= 1 (its
``target_dir`` pointed at this tool's cases) and writes the case configs once: tiny ones typed
in here, and transformers' class defaults (`Qwen3_5TextConfig()`, `Qwen3_5MoeTextConfig()`,
`Qwen3_5Config()`, `Qwen3_5MoeConfig()`, `to_dict()`, with the architecture and bfloat16).
"""
# ruff: noqa
import importlib.util, json, sys, traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("record_qwen3_next_mtp",
                                               HERE / "record_qwen3_next_mtp.py")
rq = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rq)                    # vLLM imported, every substitution applied
rdm = rq.rdm

import torch
import vllm
from vllm.config import set_current_vllm_config
from vllm.config.vllm import get_layers_from_vllm_config
from vllm.model_executor.layers.attention_layer_base import AttentionLayerBase
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.utils.torch_utils import set_default_torch_dtype
from vllm.v1.core.kv_cache_planning import get_global_kv_cache_groups
from vllm.v1.kv_cache_interface import MambaSpec
from vllm.v1.worker.gpu import attn_utils

TEXT = {"attention_bias": False, "head_dim": 32, "hidden_act": "silu", "hidden_size": 64,
        "linear_conv_kernel_dim": 4, "linear_key_head_dim": 16, "linear_num_key_heads": 2,
        "linear_num_value_heads": 4, "linear_value_head_dim": 16,
        "max_position_embeddings": 4096, "num_attention_heads": 4, "num_hidden_layers": 4,
        "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "vocab_size": 1000,
        "full_attention_interval": 4, "mamba_ssm_dtype": "float32",
        "mtp_num_hidden_layers": 1, "torch_dtype": "bfloat16"}
DENSE = dict(TEXT, model_type="qwen3_5_text", intermediate_size=128, tie_word_embeddings=True)
MOE = dict(TEXT, model_type="qwen3_5_moe_text", moe_intermediate_size=32, num_experts=4,
           num_experts_per_tok=2, shared_expert_intermediate_size=32)
VISION = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2,
          "out_hidden_size": 64, "patch_size": 16, "spatial_merge_size": 2,
          "temporal_patch_size": 2, "num_position_embeddings": 64, "in_channels": 3}


def _mm(arch, model_type, text, **top):
    return {"architectures": [arch], "model_type": model_type, "text_config": text,
            "vision_config": dict(VISION, model_type=model_type + "_vision"), **top}


def _defaults(arch, cls_name):
    import transformers
    d = getattr(transformers, cls_name)().to_dict()
    d.update(architectures=[arch], torch_dtype="bfloat16")
    return d


CONFIGS = {
    "9-tiny-qwen3-5": lambda: dict(DENSE, architectures=["Qwen3_5ForCausalLM"]),
    "10-tiny-qwen3-5-moe": lambda: dict(MOE, architectures=["Qwen3_5MoeForCausalLM"]),
    "11-tiny-qwen3-5-vl": lambda: _mm("Qwen3_5ForConditionalGeneration", "qwen3_5", DENSE,
                                      torch_dtype="bfloat16"),
    # the wrapper ties, its text config says nothing: which one vLLM reads
    "12-tiny-qwen3-5-moe-vl": lambda: _mm("Qwen3_5MoeForConditionalGeneration", "qwen3_5_moe",
                                          MOE, torch_dtype="bfloat16", tie_word_embeddings=True),
    "13-qwen3-5-text-defaults": lambda: _defaults("Qwen3_5ForCausalLM", "Qwen3_5TextConfig"),
    "14-qwen3-5-moe-text-defaults": lambda: _defaults("Qwen3_5MoeForCausalLM",
                                                      "Qwen3_5MoeTextConfig"),
    "15-qwen3-5-defaults": lambda: _defaults("Qwen3_5ForConditionalGeneration", "Qwen3_5Config"),
    "16-qwen3-5-moe-defaults": lambda: _defaults("Qwen3_5MoeForConditionalGeneration",
                                                 "Qwen3_5MoeConfig"),
}


def target_dir(case):
    d = HERE / case / "target"
    if not (d / "config.json").exists():
        d.mkdir(parents=True, exist_ok=True)
        (d / "config.json").write_text(json.dumps(CONFIGS[case](), indent=2) + "\n")
    return d


rq.target_dir = target_dir


def build0(case):
    """No speculative decoding: the target, its specs, groups and block size."""
    d = target_dir(case)
    from vllm.config import (CacheConfig, DeviceConfig, LoadConfig, ModelConfig,
                             ParallelConfig, VllmConfig)
    from vllm.platforms.interface import Platform
    from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend
    mc = ModelConfig(model=str(d), skip_tokenizer_init=True, seed=0, max_model_len=4096)
    vc = VllmConfig(model_config=mc, parallel_config=ParallelConfig(),
                    cache_config=CacheConfig(enable_prefix_caching=True),
                    device_config=DeviceConfig(device="cpu"),
                    load_config=LoadConfig(load_format="dummy", device="meta"))
    Platform._align_hybrid_block_size(vc, FlashAttentionBackend)
    cc = vc.cache_config
    with set_current_vllm_config(vc), set_default_torch_dtype(mc.dtype), torch.device("meta"):
        target = initialize_model(vc)
    for layer in get_layers_from_vllm_config(vc, AttentionLayerBase).values():
        if isinstance(layer, rq.gdn.QwenGatedDeltaNetAttention):
            layer._checkpoint_alignment = rq.FLASHINFER_GDN_CHECKPOINT_ALIGNMENT
    specs = attn_utils.get_kv_cache_spec(vc)
    # the engine core resolves one layout before planning (as record_qwen3_next_mtp.build)
    from vllm.distributed.kv_transfer.kv_connector.utils import get_current_attn_backends
    from vllm.v1.attention.backends.utils import (get_supported_kv_cache_layouts,
                                                  resolve_kv_cache_layout)
    supported = [m.name for m in get_supported_kv_cache_layouts(get_current_attn_backends(vc))]
    resolve_kv_cache_layout(vc, [supported], specs.values())
    kinds = {}
    for n in sorted(specs):
        kinds.setdefault(json.dumps(rdm.spec_json(specs[n]), sort_keys=True), []).append(n)
    by_top = {}
    for n, p in target.named_parameters():
        top = n.split(".")[0] if not n.startswith(("model.", "language_model.")) else \
            ".".join(n.split(".")[:2])
        by_top[top] = by_top.get(top, 0) + p.numel()
    return {"target": {"architectures": list(mc.architectures), "class": type(target).__name__,
                       "dtype": rdm.dt(mc.dtype),
                       "hf_text_model_type": mc.hf_text_config.model_type,
                       "tie_word_embeddings_text": getattr(mc.hf_text_config,
                                                           "tie_word_embeddings", None),
                       "param_numel": sum(p.numel() for p in target.parameters()),
                       "param_numel_by_top_module": by_top,
                       "param_bytes_by_dtype": rq.rmm._bytes(target.parameters())},
            "mamba_ssm_cache_dtype": cc.mamba_ssm_cache_dtype,
            "cache": {"block_size": cc.block_size, "mamba_block_size": cc.mamba_block_size,
                      "mamba_page_size_padded": cc.mamba_page_size_padded},
            "kv_specs": [{"layers": ls, "spec": json.loads(j)} for j, ls in kinds.items()],
            "mamba_max_memory_usage_pages": sorted({
                s.max_memory_usage_bytes(vc) // s.page_size_bytes for s in specs.values()
                if isinstance(s, MambaSpec)}),
            "kv_cache_groups": [
                {"layers": list(g.layer_names), "spec_type": type(g.kv_cache_spec).__name__,
                 "block_size": g.kv_cache_spec.block_size,
                 "page_size_bytes": g.kv_cache_spec.page_size_bytes}
                for g in get_global_kv_cache_groups(vc, [specs])]}


def main():
    rq.rmm_main_env()
    out = HERE / "qwen3_5_answers.json"
    answers = (json.loads(out.read_text()) if out.exists() else
               {"vllm_version": vllm.__version__, "torch": torch.__version__,
                "substitutions": rq.SUBSTITUTIONS, "cases": {}})
    for case in sys.argv[1:] or list(CONFIGS):
        for k in (0, 1, 3):
            key = f"{case}/K={k}"
            try:
                answers["cases"][key] = build0(case) if k == 0 else rq.build(case, k, k == 1)
            except Exception as e:
                answers["cases"][key] = {"refused": f"{type(e).__name__}: {e}",
                                         "traceback_tail": traceback.format_exc()
                                         .splitlines()[-8:]}
            print(key, "refused" if "refused" in answers["cases"][key] else "ok",
                  file=sys.stderr)
            out.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
