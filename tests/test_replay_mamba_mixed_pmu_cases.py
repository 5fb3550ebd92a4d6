"""A `prefix_match_unit` finer than every block over Mamba groups in "align" mode = vLLM 0.33.0's
Scheduler and AsyncScheduler, step for step with their KV events: beside a sliding-window group
not at the unit (vLLM's partial hash hits off), beside attention groups of other block sizes or
all at one, and with partial hits on beside full attention at other block sizes.

The eleven cases of tests/data/sched_mamba_mixed_pmu/ (README there: 80 + 63 generated, 286
runs, all matched) were answered by ../sched_mamba_mixed/oracle_mamba_mixed.py. With partial
hits off kvcli refused the unit until then (full attention's partial tails "not modelled"); it
models them (the fine full-attention manager registers the tail at the unit, the Mamba
manager its last hash boundary). The split's Mamba2 checkpoint then sits on the lcm with its
chunk starting on the unit, vLLM's ``hash_block_size`` (`MambaSplit.hash_block`; 12 of the 160
mixed runs differ with the lcm there).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import answer_of, check_run, config_of, mamba_request

from kvcore.engine.mamba_split import mamba_aligned_split
from kvcore.managers.registry import spec_from_group_config
from kvcore.prefix_match import partial_hash_hits, resolve_block_sizes

DATA = Path(__file__).resolve().parent / "data" / "sched_mamba_mixed_pmu"
CASES = sorted(DATA.glob("*.trace.jsonl"), key=lambda p: (p.name[:2], int(p.name[2:-12])))
RUNS = [(t, asyn) for t in CASES for asyn in (False, True)]


def test_the_cases_are_all_there():
    assert [t.name[:-12] for t in CASES] == [
        "mp5", "mp16", "mp26", "mp29", "mp30", "mp36", "mp40", "mp44", "mp68", "mu37", "mu48"]


@pytest.mark.parametrize("trace, asyn", RUNS,
                         ids=[f"{t.name[:-12]}-{'async' if a else 'sync'}" for t, a in RUNS])
def test_mamba_mixed_pmu_case(trace: Path, asyn: bool):
    # (None: mp26 under async, vLLM's start-up check with two batches in flight)
    if (cfg := check_run(trace, asyn)) is not None:
        bs = cfg["block_size"]
        assert all(cfg["prefix_match_unit"] < g.get("block_size", bs) for g in cfg["groups"])


def _specs(cfg: dict) -> list:
    return [spec_from_group_config(g, g.get("block_size", cfg["block_size"]))
            for g in cfg["groups"]]


def test_partial_hits_are_off_beside_a_sliding_window_not_at_the_unit():
    """What vLLM decides for these groups (its log: 'Disabling fine-grained prefix-cache hits
    because these KV cache managers require block-aligned lookups: SlidingWindowManager'):
    every sliding-window case runs without partial hits, the others with them."""
    for trace in CASES:
        cfg = config_of(trace)
        specs = _specs(cfg)
        _, hash_bs = resolve_block_sizes(specs, cfg["prefix_match_unit"], True)
        sliding = any(g["type"] == "sliding_window" for g in cfg["groups"])
        assert hash_bs == cfg["prefix_match_unit"]
        assert partial_hash_hits(specs, hash_bs, True) is not sliding, trace.name


def test_the_checkpoint_chunk_starts_on_the_unit_not_the_lcm():
    """mp5's r0 (79 tokens; Mamba2 at 32 beside sliding windows at 32 and 64, unit 8, budget
    48): vLLM schedules 32, then the last 47 in one chunk at step 2, writing the checkpoint at
    64 (the lcm) from inside a chunk that starts at 32, on the unit's grid; with the lcm as the
    grid its start must be on, the chunk stops at the Mamba block (32)."""
    lines = answer_of(DATA / "mp5.trace.jsonl")
    assert [e["scheduled"] for e in lines[1:3]] == [{"r0": 32}, {"r0": 47}]
    r = mamba_request(79, computed=32)
    assert mamba_aligned_split(r, 47, 32, 32, 48, 1, grid=64, hash_block=8) == 47
    assert mamba_aligned_split(r, 47, 32, 32, 48, 1, grid=64, hash_block=64) == 32
