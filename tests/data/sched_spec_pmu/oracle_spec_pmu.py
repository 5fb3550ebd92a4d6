# ruff: noqa
"""Dev tool (not a test, not run by CI): vLLM 0.33.0's real schedulers with speculative
decoding and a `prefix_match_unit` finer than the block (partial hash hits), step by step.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_spec_pmu/oracle_spec_pmu.py [--mtp] IN.trace.jsonl=OUT.expected.jsonl ...

The trace is ../sched_spec_mamba/oracle_spec_mamba.py's (Mamba groups beside a full-attention
group, K, the method, `disable_lookahead_block_hashes`, `eagle_groups`) with the config line's
`prefix_match_unit`, which ../oracle_mamba.py hands to vLLM's CacheConfig: the real
`resolve_kv_cache_block_sizes`, `resolve_cache_hit_alignment_tokens` and the coordinator then
decide the hash block and the partial hash hits, and the request hasher hashes every unit
(with EAGLE's lookahead token unless the legacy hashes are asked for). Nothing is copied: this
imports oracle_spec_mamba.py and runs its `main`, after wrapping the Scheduler's build to
assert that vLLM runs the case with partial hash hits (`enable_partial_hash_hits`, the hash
block the unit, below the block) and, with the legacy drop, that the dropping groups'
`eagle_proof_margin` is the unit (v1/core/kv_cache_utils.py:804).

Attention-only groups (make_spec_pmu.py's `pma*` traces) are not answered: without a Mamba
group vLLM turns no partial hash hits on, and kvcli refuses a unit finer than the block there
with or without drafts (`kvcore.prefix_match.unmodelled`); such a trace gets
../oracle_mamba.py's error line (its groups must list Mamba groups).
"""

import importlib.util
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "oracle_spec_mamba", HERE.parent / "sched_spec_mamba" / "oracle_spec_mamba.py")
sm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sm)            # exits with its message when ORACLE_TOOL is unset

from vllm.v1.core.kv_cache_utils import eagle_proof_margin  # noqa: E402

_mamba_build = sm.oracle.build_scheduler


def build_scheduler(cfg: dict, async_scheduling: bool = False):
    unit = cfg.get("prefix_match_unit")
    if not any(g["type"] == "mamba" for g in cfg["groups"]):
        raise SystemExit("attention-only groups: not answered here (no partial hash hits in "
                         "vLLM; kvcli refuses the unit there)")
    built = _mamba_build(cfg, async_scheduling)
    coord = built[0].kv_cache_manager.coordinator
    assert unit is not None and unit < cfg["block_size"], unit
    assert coord.enable_partial_hash_hits and coord.hash_block_size == unit, \
        (coord.enable_partial_hash_hits, coord.hash_block_size)
    for gid in coord.drop_eagle_group_ids:
        m = coord.single_type_managers[gid]
        assert eagle_proof_margin(m.block_size, coord.hash_block_size, True) == unit
    return built


sm.oracle.build_scheduler = build_scheduler


if __name__ == "__main__":
    sys.exit(sm.main())
