"""Partial hash hits beside a sliding-window group at the unit = vLLM 0.33.0's Scheduler and
AsyncScheduler, step for step with their KV events: a `prefix_match_unit` finer than the Mamba
block, a sliding window whose block is the unit (so vLLM keeps its partial hash hits on: that
manager's lookup is block-aligned, and its block is the hash block), Mamba groups in "align"
mode, full attention at other block sizes or none.

The thirteen cases of tests/data/sched_mamba_window_pmu/ (README there: 60 generated, 120 runs,
all alike) were answered by ../sched_mamba_mixed_pmu/with_unit.py. kvcli refused the unit here
until then ("hits inside a block next to a group that is neither full attention nor Mamba");
what it needs is what kvcli had: hits on the hash grid, which the window's whole blocks are.
`X.cache.jsonl`: cache mode over the same traces (../cache_mode_mamba_mixed/oracle_cache_mixed.py;
59 of 59 alike, 1 refused alike).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import answer_of, check_run, config_of, replay_case
from test_replay_mixed_pmu_cases import check_cache

from kvcore.errors import InputError
from kvcore.managers.registry import spec_from_group_config
from kvcore.prefix_match import (
    cache_hit_alignment,
    chunked_alignment,
    partial_hash_hits,
    unmodelled,
)
from kvcore.specs import SlidingWindowSpec

DATA = Path(__file__).resolve().parent / "data" / "sched_mamba_window_pmu"
CASES = sorted(DATA.glob("mw*.trace.jsonl"), key=lambda p: int(p.name[2:-12]))
# (a chunked local group at the unit instead of the first window: make_window_pmu.py --chunked)
CHUNKED = sorted(DATA.glob("mc*.trace.jsonl"), key=lambda p: int(p.name[2:-12]))
CHUNKED_RUNS = [(t, asyn) for t in CHUNKED for asyn in (False, True)]
RUNS = [(t, asyn) for t in CASES for asyn in (False, True)]


def _specs(cfg: dict) -> list:
    return [spec_from_group_config(g, g.get("block_size", cfg["block_size"]))
            for g in cfg["groups"]]


def test_the_cases_are_all_there():
    assert [t.name[:-12] for t in CASES] == [
        "mw3", "mw9", "mw13", "mw16", "mw18", "mw19", "mw30", "mw36", "mw37", "mw39", "mw47",
        "mw48", "mw50"]


@pytest.mark.parametrize("trace, asyn", RUNS,
                         ids=[f"{t.name[:-12]}-{'async' if a else 'sync'}" for t, a in RUNS])
def test_mamba_window_pmu_case(trace: Path, asyn: bool):
    # (None: mw47 under async, vLLM's start-up check with two batches in flight)
    check_run(trace, asyn)


def test_partial_hits_stay_on_beside_a_window_at_the_unit():
    for trace in CASES:
        cfg = config_of(trace)
        specs, unit = _specs(cfg), cfg["prefix_match_unit"]
        assert any(isinstance(s, SlidingWindowSpec) and s.block_size == unit for s in specs)
        assert partial_hash_hits(specs, unit, True), trace.name
        assert cache_hit_alignment(specs, unit, True) == unit
        # (with the CPU tier too: tests/data/offload_mixed_pmu/; a chunked group at the unit
        # beside it, tests/data/offload_chunked_pmu/ ocuN)
        assert unmodelled(specs, unit, True) is None


def test_a_hit_lands_inside_the_mamba_block():
    """mw16 (Mamba2 at 16 beside a sliding window at 4, unit 4): vLLM's requests hit 100
    tokens in all, not a multiple of the Mamba block."""
    for kind in ("expected", "async.expected"):
        summary = answer_of(DATA / "mw16.trace.jsonl", kind)[-1]["summary"]
        assert sum(r["num_cached_tokens"] for r in summary["requests"]) == 100


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_mamba_window_pmu_cache_mode(trace: Path):
    check_cache(trace)


@pytest.mark.parametrize("trace, asyn", CHUNKED_RUNS,
                         ids=[f"{t.name[:-12]}-{'async' if a else 'sync'}" for t, a in CHUNKED_RUNS])
def test_chunked_local_at_the_unit(trace: Path, asyn: bool):
    """A chunked local group at the unit: with partial hits on its block is the hit alignment
    and vLLM runs it (mc9, mc13, mc16, mc48); with them off (mc5: a second sliding window not
    at the unit) vLLM's chunked manager asserts at the first lookup, refused alike."""
    expected = answer_of(trace, "async.expected" if asyn else "expected")
    cfg = config_of(trace)
    specs, unit = _specs(cfg), cfg["prefix_match_unit"]
    on = partial_hash_hits(specs, unit, True)
    assert chunked_alignment(specs, unit) == (unit if on else cache_hit_alignment(
        specs, unit, True))
    if "error" in expected[-1]:
        assert not on and expected[-1]["error"] == (
            "AssertionError: KV cache groups with different block sizes are not compatible "
            "with chunked local attention now")
        with pytest.raises(InputError, match="fail in vLLM at its first prefix-cache lookup"):
            replay_case(trace, async_scheduling=asyn)
        return
    assert on
    check_run(trace, asyn)

