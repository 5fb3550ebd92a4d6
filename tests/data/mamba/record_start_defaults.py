"""Dev tool (not a test, not run by CI): what vLLM 0.33.0's start-up derives for a hybrid
Mamba model with prefix caching on (its defaults), recorded into start_defaults.json.

    R=~/.cache/vllm-oracle
    PYTHONPATH=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/mamba/record_start_defaults.py > tests/data/mamba/start_defaults.json

No GPU: the real `VllmConfig` is built from the config.json (its `MambaModelConfig` hook sets
the cache mode and `mamba_block_size`), then the real `Platform._align_hybrid_block_size` runs
with the FlashAttention backend (what a Hopper GPU selects; kvcli assumes it); the Mamba spec is
the real layer class's `get_kv_cache_spec` (`MambaMixer` for Jamba, `MambaMixer2` for the
Granite-4.0-H style config and Nemotron Nano 9B v2, its published shape typed in: Mamba2,
attention and feed-forward-only layers, the last with no spec; Falcon-H1-7B-Base's config
(its sizing fields checked against public copies, tests/data/README.md): attention and Mamba2
side by side in every layer) on an instance whose state shapes come from the model class;
the groups are vLLM's `get_kv_cache_groups`; the scheduler's block sizes are
`resolve_kv_cache_block_sizes`, partial hash hits `partial_hash_hits_enabled`.
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

from kvcore.models.presets import PRESETS  # noqa: E402


def model_dir(cfg: dict) -> str:
    d = tempfile.mkdtemp()
    (Path(d) / "config.json").write_text(json.dumps(cfg))
    return d


def answer(name: str, cfg: dict, mixer: str, pmu: int | None = None) -> dict:
    from vllm.config import (CacheConfig, DeviceConfig, ModelConfig, ParallelConfig,
                             SchedulerConfig, VllmConfig)
    from vllm.model_executor.models import ModelRegistry
    from vllm.platforms.interface import Platform
    from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend
    from vllm.v1.core import kv_cache_planning as P
    from vllm.v1.core.kv_cache_utils import (partial_hash_hits_enabled,
                                             resolve_cache_hit_alignment_tokens,
                                             resolve_kv_cache_block_sizes)
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, MambaSpec
    import vllm.model_executor.layers.mamba.mamba_mixer as m1
    import vllm.model_executor.layers.mamba.mamba_mixer2 as m2

    mml = 8192
    mc = ModelConfig(model=model_dir(cfg), skip_tokenizer_init=True, max_model_len=mml,
                     dtype="auto")
    vc = VllmConfig(model_config=mc, cache_config=CacheConfig(enable_prefix_caching=True,
                                                            prefix_match_unit=pmu),
                    scheduler_config=SchedulerConfig(max_model_len=mml,
                                                     is_encoder_decoder=False,
                                                     enable_chunked_prefill=True),
                    parallel_config=ParallelConfig(), device_config=DeviceConfig(device="cpu"))
    cc = vc.cache_config
    after_hook = {"block_size": cc.block_size, "mamba_cache_mode": cc.mamba_cache_mode,
                  "mamba_block_size": cc.mamba_block_size}
    Platform._align_hybrid_block_size(vc, FlashAttentionBackend)
    cls, _ = ModelRegistry.resolve_model_cls(mc.architecture, model_config=mc)
    shapes = cls.get_mamba_state_shape_from_config(vc)
    dtypes = cls.get_mamba_state_dtype_from_config(vc)
    layer_cls = m2.MambaMixer2 if mixer == "mamba2" else m1.MambaMixer
    inst = object.__new__(layer_cls)
    inst.__dict__.update(get_state_shape=lambda: shapes, get_state_dtype=lambda: dtypes)
    mspec = inst.get_kv_cache_spec(vc)
    aspec = FullAttentionSpec(block_size=cc.block_size,
                              num_kv_heads=mc.get_num_kv_heads(vc.parallel_config),
                              head_size=mc.get_head_size(), dtype=mc.dtype)
    # a Nemotron-H feed-forward layer ("mlp") keeps no KV cache: no spec; a Falcon-H1 layer
    # ("parallel") registers its attention as layer i and its Mamba mixer as layer n + i
    # (FalconH1ParallelHybrid)
    kinds = load_kinds(cfg)
    specs = {}
    for i, k in enumerate(kinds):
        if k == "parallel":
            specs[f"layers.{i}"], specs[f"layers.{len(kinds) + i}"] = aspec, mspec
        elif k != "mlp":
            specs[f"layers.{i}"] = mspec if k == "mamba" else aspec
    pc = planning_config(max_model_len=mml, max_num_batched_tokens=8192,
                         max_in_flight_tokens=16384, retention=0,
                         mamba_cache_mode=cc.mamba_cache_mode)
    groups = P.get_kv_cache_groups(pc, dict(specs))
    kcc = KVCacheConfig(num_blocks=1000, kv_cache_tensors=[], kv_cache_groups=groups)
    try:
        sched_bs, hash_bs = resolve_kv_cache_block_sizes(kcc, vc)
    except ValueError as err:       # vLLM refuses the prefix_match_unit (record_prefix_match_unit)
        return {"name": name, "prefix_match_unit": pmu, "refused": str(err)}
    return {
        "name": name, "after_model_hook": after_hook,
        "block_size": cc.block_size, "mamba_block_size": cc.mamba_block_size,
        "mamba_page_size_padded": cc.mamba_page_size_padded,
        "mamba_page_size_real": mspec.real_page_size_bytes,
        "attention_page_size": aspec.page_size_bytes,
        "mamba_spec": {"block_size": mspec.block_size, "mamba_type": str(mspec.mamba_type),
                       "mamba_cache_mode": mspec.mamba_cache_mode,
                       "num_speculative_blocks": mspec.num_speculative_blocks,
                       "num_prefill_checkpoint_blocks": mspec.num_prefill_checkpoint_blocks,
                       "prefill_checkpoint_alignment": mspec.prefill_checkpoint_alignment,
                       "max_memory_usage_pages": mspec.max_memory_usage_bytes(vc)
                       // mspec.page_size_bytes},
        "groups": [{"kind": "mamba" if isinstance(g.kv_cache_spec, MambaSpec) else "full",
                    "block_size": g.kv_cache_spec.block_size, "num_layers": len(g.layer_names)}
                   for g in groups],
        "scheduler_block_size": sched_bs, "hash_block_size": hash_bs,
        "partial_hash_hits": partial_hash_hits_enabled(groups, hash_bs, 1),
        "cache_hit_alignment_tokens": resolve_cache_hit_alignment_tokens(kcc, vc, sched_bs,
                                                                         hash_bs),
        "prefix_match_unit": cc.prefix_match_unit,
        "enable_mamba_shared_prefix_checkpoint": cc.enable_mamba_shared_prefix_checkpoint,
    }


def load_kinds(cfg: dict) -> tuple:
    from kvcore.models.hf_config import read_hf_config
    return read_hf_config(cfg).layer_kinds


def main() -> None:
    jamba = dict(PRESETS["jamba-v0.1"][1])
    granite = json.loads((HERE / "granite-4.0-h-tiny-style.config.json").read_text())
    nemotron = json.loads((HERE / "nemotron-nano-9b-v2.config.json").read_text())
    falcon = json.loads((HERE / "falcon-h1-7b.config.json").read_text())
    out = {"generator": "vLLM 0.33.0 VllmConfig + Platform._align_hybrid_block_size "
                        "(FlashAttention) + get_kv_cache_groups + resolve_kv_cache_block_sizes "
                        "(real code, CPU); max_model_len 8192, prefix caching on",
           "cases": [answer("jamba-v0.1", jamba, "mamba1"),
                     answer("granite-4.0-h-tiny-style", granite, "mamba2"),
                     answer("nemotron-nano-9b-v2", nemotron, "mamba2"),
                     answer("falcon-h1-7b", falcon, "mamba2")]}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
