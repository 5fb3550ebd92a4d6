"""Dev tool (not a test, not run by CI): what vLLM 0.33.0's start-up derives for LFM2
(`Lfm2ForCausalLM`, `Lfm2MoeForCausalLM`: short-convolution layers beside attention), prefix
caching on and off,
recorded into start.json.

    R=~/.cache/vllm-oracle
    PYTHONPATH=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/lfm2/record_start.py > tests/data/lfm2/start.json

No GPU: the real `VllmConfig` from the config.json (its hybrid hook sets the cache mode), the
real `Platform._align_hybrid_block_size` with the FlashAttention backend (what a Hopper GPU
selects; kvcli assumes it), the `ShortConv` layer's own `get_kv_cache_spec` on an instance whose
state shape and dtype come from the model class, a `FullAttentionSpec` for each attention layer,
vLLM's `get_kv_cache_groups` and planning over 4 GiB (../vllm_planning.py), the block size
EngineCore sets, `resolve_kv_cache_block_sizes`.
"""
# ruff: noqa
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))      # vllm_planning.py
from vllm_planning import plan, planning_config  # noqa: E402

CONFIGS = ("tiny-lfm2", "lfm2-1.2b-style", "tiny-lfm2-moe", "lfm2-8b-a1b-style")
MML = 8192
AVAILABLE = 4 * 2**30


def answer(name: str, cfg: dict) -> dict:
    from vllm.config import (CacheConfig, DeviceConfig, ModelConfig, ParallelConfig,
                             SchedulerConfig, VllmConfig)
    from vllm.model_executor.models import ModelRegistry
    from vllm.platforms.interface import Platform
    from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend
    from vllm.v1.core.kv_cache_utils import resolve_kv_cache_block_sizes
    from vllm.v1.kv_cache_interface import FullAttentionSpec, MambaSpec
    from vllm.model_executor.layers.mamba.short_conv import ShortConv

    d = tempfile.mkdtemp()
    (Path(d) / "config.json").write_text(json.dumps(cfg))
    out = {"name": name, "modes": {}}
    for caching in (False, True):
        mc = ModelConfig(model=d, skip_tokenizer_init=True, max_model_len=MML, dtype="auto")
        vc = VllmConfig(model_config=mc, cache_config=CacheConfig(enable_prefix_caching=caching),
                        scheduler_config=SchedulerConfig(max_model_len=MML,
                                                         is_encoder_decoder=False,
                                                         enable_chunked_prefill=True),
                        parallel_config=ParallelConfig(), device_config=DeviceConfig(device="cpu"))
        out.update(is_hybrid=mc.is_hybrid, prefix_caching_by_default=mc.is_prefix_caching_supported)
        cc = vc.cache_config
        Platform._align_hybrid_block_size(vc, FlashAttentionBackend)
        cls, _ = ModelRegistry.resolve_model_cls(mc.architecture, model_config=mc)
        shapes = cls.get_mamba_state_shape_from_config(vc)
        dtypes = cls.get_mamba_state_dtype_from_config(vc)
        inst = object.__new__(ShortConv)
        inst.__dict__.update(get_state_shape=lambda: shapes, get_state_dtype=lambda: dtypes)
        cspec = inst.get_kv_cache_spec(vc)
        aspec = FullAttentionSpec(block_size=cc.block_size,
                                  num_kv_heads=mc.get_num_kv_heads(vc.parallel_config),
                                  head_size=mc.get_head_size(), dtype=mc.dtype)
        specs = {f"model.layers.{i}": (aspec if t == "full_attention" else cspec)
                 for i, t in enumerate(mc.hf_config.layer_types)}
        pc = planning_config(max_model_len=MML, max_num_batched_tokens=8192,
                             max_in_flight_tokens=16384, retention=0,
                             mamba_cache_mode=cc.mamba_cache_mode)
        groups, kc, numbers = plan(pc, dict(specs), AVAILABLE)
        cc.block_size = min(g.kv_cache_spec.block_size for g in groups)
        sched_bs, hash_bs = resolve_kv_cache_block_sizes(kc, vc)
        out["modes"]["on" if caching else "off"] = {
            "mamba_cache_mode": cc.mamba_cache_mode, "block_size": aspec.block_size,
            "mamba_block_size": cc.mamba_block_size,
            "conv_spec": {"block_size": cspec.block_size,
                          "shapes": [list(s) for s in cspec.shapes],
                          "dtypes": [str(t) for t in cspec.dtypes],
                          "real_page_size_bytes": cspec.real_page_size_bytes,
                          "page_size_bytes": cspec.page_size_bytes,
                          "mamba_type": str(cspec.mamba_type),
                          "num_prefill_checkpoint_blocks": cspec.num_prefill_checkpoint_blocks,
                          "max_memory_usage_pages": cspec.max_memory_usage_bytes(vc)
                          // cspec.page_size_bytes},
            "attention_page_size": aspec.page_size_bytes,
            "groups": [{"kind": "mamba" if isinstance(g.kv_cache_spec, MambaSpec) else "full",
                        "block_size": g.kv_cache_spec.block_size,
                        "num_layers": len(g.layer_names)} for g in groups],
            "scheduler_block_size": sched_bs, "hash_block_size": hash_bs,
            "available_bytes": AVAILABLE, **numbers}
    return out


def main() -> None:
    cases = [answer(n, json.loads((HERE / f"{n}.config.json").read_text())) for n in CONFIGS]
    print(json.dumps({"generator": "vLLM 0.33.0 VllmConfig + Platform._align_hybrid_block_size "
                      "(FlashAttention) + ShortConv.get_kv_cache_spec + get_kv_cache_groups / "
                      "planning + resolve_kv_cache_block_sizes (real code, CPU); max_model_len "
                      f"{MML}, {AVAILABLE} bytes for the KV cache", "cases": cases}, indent=1))


if __name__ == "__main__":
    main()
