"""Dev tool (not a test, not run by CI): what vLLM 0.33.0's start-up derives for the
attention-free Mamba models (MambaForCausalLM, FalconMambaForCausalLM, Mamba2ForCausalLM), with
prefix caching off (vLLM's default for them) and on, recorded into start.json.

    R=~/.cache/vllm-oracle
    PYTHONPATH=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/mamba_only/record_start.py > tests/data/mamba_only/start.json

No GPU: the real `ModelConfig` (is the model attention-free, does vLLM turn prefix caching on
by default: `is_prefix_caching_supported`, the max_model_len it derives with none given), the
real `VllmConfig` (its `MambaModelConfig` hook sets the cache mode and `mamba_block_size`; no
platform block-size alignment runs for a model with no attention backend), the layer class's
own `get_kv_cache_spec` (`MambaMixer` / `MambaMixer2` on an instance whose state shapes and
dtypes come from the model class), vLLM's `get_kv_cache_groups` and planning over every layer
(../vllm_planning.py), `cache_config.block_size` set to the groups' smallest block as
`EngineCore._initialize_kv_caches` sets it, then `resolve_kv_cache_block_sizes`.
"""
# ruff: noqa
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))      # vllm_planning.py
from vllm_planning import plan, planning_config  # noqa: E402

CONFIGS = ("tiny-mamba1", "tiny-falcon-mamba", "tiny-mamba2", "mamba-130m-style",
           "falcon-mamba-7b-style", "mamba-codestral-7b-style")
MML = 8192
AVAILABLE = 4 * 2**30


def model_dir(cfg: dict) -> str:
    d = tempfile.mkdtemp()
    (Path(d) / "config.json").write_text(json.dumps(cfg))
    return d


def answer(name: str, cfg: dict) -> dict:
    from vllm.config import (CacheConfig, DeviceConfig, ModelConfig, ParallelConfig,
                             SchedulerConfig, VllmConfig)
    from vllm.model_executor.models import ModelRegistry
    from vllm.v1.core.kv_cache_utils import resolve_kv_cache_block_sizes
    from vllm.v1.kv_cache_interface import KVCacheConfig
    import vllm.model_executor.layers.mamba.mamba_mixer as m1
    import vllm.model_executor.layers.mamba.mamba_mixer2 as m2

    d = model_dir(cfg)
    bare = ModelConfig(model=d, skip_tokenizer_init=True, dtype="auto")
    out = {"name": name, "architecture": bare.architecture,
           "is_attention_free": bare.is_attention_free, "is_hybrid": bare.is_hybrid,
           "prefix_caching_by_default": bare.is_prefix_caching_supported,
           "default_max_model_len": bare.max_model_len, "dtype": str(bare.dtype), "modes": {}}
    for caching in (False, True):
        mc = ModelConfig(model=d, skip_tokenizer_init=True, max_model_len=MML, dtype="auto")
        vc = VllmConfig(model_config=mc,
                        cache_config=CacheConfig(enable_prefix_caching=caching),
                        scheduler_config=SchedulerConfig(max_model_len=MML,
                                                         is_encoder_decoder=False,
                                                         enable_chunked_prefill=True),
                        parallel_config=ParallelConfig(), device_config=DeviceConfig(device="cpu"))
        cc = vc.cache_config
        cls, _ = ModelRegistry.resolve_model_cls(mc.architecture, model_config=mc)
        shapes = cls.get_mamba_state_shape_from_config(vc)
        dtypes = cls.get_mamba_state_dtype_from_config(vc)
        layer_cls = m2.MambaMixer2 if mc.architecture == "Mamba2ForCausalLM" else m1.MambaMixer
        inst = object.__new__(layer_cls)
        inst.__dict__.update(get_state_shape=lambda: shapes, get_state_dtype=lambda: dtypes)
        spec = inst.get_kv_cache_spec(vc)
        n = mc.hf_config.num_hidden_layers
        specs = {f"backbone.layers.{i}.mixer": spec for i in range(n)}
        pc = planning_config(max_model_len=MML, max_num_batched_tokens=8192,
                             max_in_flight_tokens=16384, retention=0,
                             mamba_cache_mode=cc.mamba_cache_mode)
        groups, kc, numbers = plan(pc, dict(specs), AVAILABLE)
        block_after_hook = cc.block_size
        cc.block_size = min(g.kv_cache_spec.block_size for g in groups)
        sched_bs, hash_bs = resolve_kv_cache_block_sizes(kc, vc)
        out["modes"]["on" if caching else "off"] = {
            "mamba_cache_mode": cc.mamba_cache_mode, "block_size_after_hook": block_after_hook,
            "mamba_block_size": cc.mamba_block_size,
            "mamba_page_size_padded": cc.mamba_page_size_padded,
            "spec": {"block_size": spec.block_size, "shapes": [list(s) for s in spec.shapes],
                     "dtypes": [str(t) for t in spec.dtypes],
                     "page_size_bytes": spec.page_size_bytes,
                     "mamba_type": str(spec.mamba_type),
                     "num_prefill_checkpoint_blocks": spec.num_prefill_checkpoint_blocks,
                     "prefill_checkpoint_alignment": spec.prefill_checkpoint_alignment,
                     "max_memory_usage_pages": spec.max_memory_usage_bytes(vc)
                     // spec.page_size_bytes},
            "groups": [{"block_size": g.kv_cache_spec.block_size,
                        "num_layers": len(g.layer_names)} for g in groups],
            "scheduler_block_size": sched_bs, "hash_block_size": hash_bs,
            "available_bytes": AVAILABLE, **numbers}
    return out


def main() -> None:
    cases = [answer(n, json.loads((HERE / f"{n}.config.json").read_text())) for n in CONFIGS]
    print(json.dumps({"generator": "vLLM 0.33.0 ModelConfig + VllmConfig (MambaModelConfig hook) "
                      "+ the layer's get_kv_cache_spec + get_kv_cache_groups / planning + "
                      f"resolve_kv_cache_block_sizes (real code, CPU); max_model_len {MML}, "
                      f"{AVAILABLE} bytes for the KV cache", "cases": cases}, indent=1))


if __name__ == "__main__":
    main()
