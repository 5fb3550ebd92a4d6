"""Dev tool (not a test, not run by CI): what vLLM 0.33.0's start-up derives and refuses with
`--prefix-match-unit N` (CacheConfig.prefix_match_unit) for hybrid Mamba models, recorded into
prefix_match_unit.json for tests/test_prefix_match_unit.py.

    R=~/.cache/vllm-oracle
    PYTHONPATH=$R/src:tests/data/mamba/oracle_stubs VLLM_LOGGING_LEVEL=ERROR \\
        $R/venv/bin/python tests/data/mamba/record_prefix_match_unit.py \\
        > tests/data/mamba/prefix_match_unit.json

No GPU. The hybrid cases are record_start_defaults.py's and record_gdn_start.py's `answer`
with the unit given to the real CacheConfig: Jamba (Mamba1, block 80), Nemotron Nano 9B v2
(Mamba2, block 1,312) and Qwen3-Next 80B-A3B (Gated DeltaNet with FlashInfer's checkpoint
kernel, block 576), units 16 and 64 (and the block itself). What changes is read from vLLM's
own functions: `resolve_kv_cache_block_sizes` (the hash block, or its refusal),
`partial_hash_hits_enabled`, `resolve_cache_hit_alignment_tokens`, and the layer's spec
(Qwen3-Next's checkpoint alignment is `get_mamba_prefill_checkpoint_grid`,
lcm(unit, 64)). The single-group refusal: one full-attention group (a Llama-3-8B-shaped
spec, block 16) through the same `resolve_kv_cache_block_sizes`, units 16, 8 and 32; a
sliding-window and a full-attention group of block 16 (no Mamba), units 8 and 16.
"""
# ruff: noqa
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import record_gdn_start as gdn  # noqa: E402
import record_start_defaults as sd  # noqa: E402


def single_group(pmu: int) -> dict:
    import torch
    from types import SimpleNamespace as NS
    from vllm.config import CacheConfig
    from vllm.v1.core.kv_cache_utils import resolve_kv_cache_block_sizes
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec

    cc = CacheConfig(block_size=16, enable_prefix_caching=True, prefix_match_unit=pmu)
    vc = NS(cache_config=cc, parallel_config=NS(decode_context_parallel_size=1),
            kv_transfer_config=None)
    spec = FullAttentionSpec(block_size=16, num_kv_heads=8, head_size=128, dtype=torch.bfloat16)
    kcc = KVCacheConfig(num_blocks=1000, kv_cache_tensors=[],
                        kv_cache_groups=[KVCacheGroupSpec(["layers.0"], spec)])
    try:
        sched_bs, hash_bs = resolve_kv_cache_block_sizes(kcc, vc)
    except ValueError as err:
        return {"name": "single-full-16", "prefix_match_unit": pmu, "refused": str(err)}
    return {"name": "single-full-16", "prefix_match_unit": pmu,
            "scheduler_block_size": sched_bs, "hash_block_size": hash_bs}


def sliding_full(pmu: int) -> dict:
    """A Gemma-3-style pair, a sliding-window group and a full-attention group of block 16: no
    Mamba group, so a finer unit hashes finer but never hits inside a block."""
    import torch
    from types import SimpleNamespace as NS
    from vllm.config import CacheConfig
    from vllm.v1.core.kv_cache_utils import (partial_hash_hits_enabled,
                                             resolve_kv_cache_block_sizes)
    from vllm.v1.kv_cache_interface import (FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec,
                                            SlidingWindowSpec)

    cc = CacheConfig(block_size=16, enable_prefix_caching=True, prefix_match_unit=pmu)
    vc = NS(cache_config=cc, parallel_config=NS(decode_context_parallel_size=1),
            kv_transfer_config=None)
    kw = dict(block_size=16, num_kv_heads=8, head_size=128, dtype=torch.bfloat16)
    groups = [KVCacheGroupSpec(["layers.0"], SlidingWindowSpec(sliding_window=1024, **kw)),
              KVCacheGroupSpec(["layers.1"], FullAttentionSpec(**kw))]
    kcc = KVCacheConfig(num_blocks=1000, kv_cache_tensors=[], kv_cache_groups=groups)
    sched_bs, hash_bs = resolve_kv_cache_block_sizes(kcc, vc)
    return {"name": "sliding-full-16", "prefix_match_unit": pmu,
            "scheduler_block_size": sched_bs, "hash_block_size": hash_bs,
            "partial_hash_hits": partial_hash_hits_enabled(groups, hash_bs, 1)}


def main() -> None:
    jamba = dict(sd.PRESETS["jamba-v0.1"][1])
    nemotron = json.loads((HERE / "nemotron-nano-9b-v2.config.json").read_text())
    cases = []
    for pmu in (16, 64, 80):
        cases.append(sd.answer("jamba-v0.1", jamba, "mamba1", pmu))
    for pmu in (16, 64, 1312):
        cases.append(sd.answer("nemotron-nano-9b-v2", nemotron, "mamba2", pmu))
    for pmu in (16, 64, 576):
        c = gdn.answer("flashinfer", 1, 8192, pmu)
        cases.append({"name": "qwen3-next-80b-a3b", **c})
    for pmu in (16, 8, 32):
        cases.append(single_group(pmu))
    for pmu in (8, 16):
        cases.append(sliding_full(pmu))
    print(json.dumps({"generator": "vLLM 0.33.0 CacheConfig(prefix_match_unit=N) + "
                                   "record_start_defaults.py / record_gdn_start.py + "
                                   "resolve_kv_cache_block_sizes (real code, CPU)",
                      "cases": cases}, indent=1))


if __name__ == "__main__":
    main()
