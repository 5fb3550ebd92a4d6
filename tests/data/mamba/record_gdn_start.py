"""Dev tool (not a test, not run by CI): what vLLM 0.33.0's start-up derives for Qwen3-Next
(Gated DeltaNet + full attention), recorded into gdn_start.json for tests/test_qwen3_next.py.

    R=~/.cache/vllm-oracle
    PYTHONPATH=$R/src:tests/data/mamba/oracle_stubs VLLM_LOGGING_LEVEL=ERROR \\
        $R/venv/bin/python tests/data/mamba/record_gdn_start.py > tests/data/mamba/gdn_start.json

No GPU. As record_start_defaults.py: the real `VllmConfig` from qwen3-next-80b-a3b.config.json
(its published shape, typed in), the real `Platform._align_hybrid_block_size` with the
FlashAttention backend, the state shapes and dtypes from `Qwen3NextForCausalLM`, the spec from
the real `QwenGatedDeltaNetAttention.get_kv_cache_spec` (an instance holding what it reads),
vLLM's `get_kv_cache_groups`. Twice, for the two GDN prefill kernels vLLM may pick: "triton"
(what a CPU, and GPUs without FlashInfer's GDN kernel, get: no checkpoint) and "flashinfer"
(Hopper: the layer's checkpoint alignment is `FLASHINFER_GDN_CHECKPOINT_ALIGNMENT`; here set on
the instance, and `get_mamba_prefill_checkpoint_alignment`, which reads it from the built
layers, answers it, since no layer is built without a GPU). `compressed_tensors`, missing
from the oracle's environment and imported by the layer's module, is stubbed by
oracle_stubs/sitecustomize.py.
"""
# ruff: noqa
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))
sys.path.insert(0, str(HERE.parent))      # vllm_planning.py
from vllm_planning import planning_config  # noqa: E402


def answer(kernel: str, tp: int, mml: int, pmu: int | None = None) -> dict:
    from vllm.config import (CacheConfig, DeviceConfig, ModelConfig, ParallelConfig,
                             SchedulerConfig, VllmConfig)
    from vllm.model_executor.layers.mamba import abstract
    from vllm.model_executor.layers.mamba.gdn.qwen_gdn_linear_attn import (
        QwenGatedDeltaNetAttention)
    from vllm.model_executor.models import ModelRegistry
    from vllm.platforms.interface import Platform
    from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend
    from vllm.v1.attention.backends.gdn_attn import FLASHINFER_GDN_CHECKPOINT_ALIGNMENT
    from vllm.v1.core import kv_cache_planning as P
    from vllm.v1.kv_cache_interface import FullAttentionSpec, MambaSpec

    align = FLASHINFER_GDN_CHECKPOINT_ALIGNMENT if kernel == "flashinfer" else None
    abstract.get_mamba_prefill_checkpoint_alignment = lambda vc: align
    d = tempfile.mkdtemp()
    (Path(d) / "config.json").write_text((HERE / "qwen3-next-80b-a3b.config.json").read_text())
    mc = ModelConfig(model=d, skip_tokenizer_init=True, max_model_len=mml, dtype="auto")
    vc = VllmConfig(model_config=mc, cache_config=CacheConfig(enable_prefix_caching=True,
                                                            prefix_match_unit=pmu),
                    scheduler_config=SchedulerConfig(max_model_len=mml, is_encoder_decoder=False,
                                                     enable_chunked_prefill=True),
                    parallel_config=ParallelConfig(tensor_parallel_size=tp),
                    device_config=DeviceConfig(device="cpu"))
    cc = vc.cache_config
    Platform._align_hybrid_block_size(vc, FlashAttentionBackend)
    cls, _ = ModelRegistry.resolve_model_cls(mc.architecture, model_config=mc)
    shapes = cls.get_mamba_state_shape_from_config(vc)
    dtypes = cls.get_mamba_state_dtype_from_config(vc)
    layer = object.__new__(QwenGatedDeltaNetAttention)
    layer.__dict__.update(get_state_shape=lambda: shapes, get_state_dtype=lambda: dtypes,
                          vllm_config=vc, _checkpoint_alignment=align)
    mspec = layer.get_kv_cache_spec(vc)
    aspec = FullAttentionSpec(block_size=cc.block_size,
                              num_kv_heads=mc.get_num_kv_heads(vc.parallel_config),
                              head_size=mc.get_head_size(), dtype=mc.dtype)
    types = mc.hf_text_config.layer_types
    specs = {f"layers.{i}": (mspec if t == "linear_attention" else aspec)
             for i, t in enumerate(types)}
    pc = planning_config(max_model_len=mml, max_num_batched_tokens=8192,
                         max_in_flight_tokens=16384, retention=0,
                         mamba_cache_mode=cc.mamba_cache_mode)
    groups = P.get_kv_cache_groups(pc, dict(specs))
    from vllm.v1.core.kv_cache_utils import (partial_hash_hits_enabled,
                                             resolve_cache_hit_alignment_tokens,
                                             resolve_kv_cache_block_sizes)
    from vllm.v1.kv_cache_interface import KVCacheConfig
    kcc = KVCacheConfig(num_blocks=1000, kv_cache_tensors=[], kv_cache_groups=groups)
    try:
        sched_bs, hash_bs = resolve_kv_cache_block_sizes(kcc, vc)
    except ValueError as err:       # vLLM refuses the prefix_match_unit (record_prefix_match_unit)
        return {"kernel": kernel, "tp": tp, "prefix_match_unit": pmu, "refused": str(err)}
    sizes = {"scheduler_block_size": sched_bs, "hash_block_size": hash_bs,
             "partial_hash_hits": partial_hash_hits_enabled(groups, hash_bs, 1),
             "cache_hit_alignment_tokens": resolve_cache_hit_alignment_tokens(kcc, vc, sched_bs,
                                                                              hash_bs),
             "prefix_match_unit": cc.prefix_match_unit}
    return {**sizes, "kernel": kernel, "tp": tp, "max_model_len": mml, "layer_types": list(types),
            "block_size": cc.block_size, "mamba_block_size": cc.mamba_block_size,
            "mamba_page_size_padded": cc.mamba_page_size_padded,
            "mamba_spec": {"shapes": [list(s) for s in mspec.shapes],
                           "dtypes": [str(t).removeprefix("torch.") for t in mspec.dtypes],
                           "page_size_bytes": mspec.page_size_bytes,
                           "real_page_size_bytes": mspec.real_page_size_bytes,
                           "num_prefill_checkpoint_blocks": mspec.num_prefill_checkpoint_blocks,
                           "prefill_checkpoint_alignment": mspec.prefill_checkpoint_alignment,
                           "max_memory_usage_pages": mspec.max_memory_usage_bytes(vc)
                           // mspec.page_size_bytes},
            "attention_page_size": aspec.page_size_bytes,
            "groups": [{"kind": "mamba" if isinstance(g.kv_cache_spec, MambaSpec) else "full",
                        "block_size": g.kv_cache_spec.block_size,
                        "layers": list(g.layer_names)} for g in groups]}


def main() -> None:
    print(json.dumps({"generator": "vLLM 0.33.0 VllmConfig + Platform._align_hybrid_block_size "
                                   "(FlashAttention) + QwenGatedDeltaNetAttention."
                                   "get_kv_cache_spec + get_kv_cache_groups (real code, CPU); "
                                   "prefix caching on",
                      "cases": [answer(k, tp, 8192) for k in ("flashinfer", "triton")
                                for tp in (1, 4)]}, indent=1))


if __name__ == "__main__":
    main()
