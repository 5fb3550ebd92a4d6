"""Pipeline parallelism over the groups vLLM 0.33 plans for a Mamba hybrid some of whose stages
hold no attention layer = vLLM 0.33.0's Scheduler and AsyncScheduler, step for step.

Such a stage keeps its Mamba layers at the configured block B, the stages with attention raise
theirs to A (`kvcore.sizing.stage_specs`), so the groups hold Mamba layers at two block sizes
(Kimi Linear's tiny config on 4 stages: Mamba 16 x 3, Mamba 512, MLA 512 x 2). The nine cases of
tests/data/sched_pp_mamba_stages/ (README there: 40 drawn, all matched) were answered by the
real schedulers through its oracle_pp_stages.py. What they need: the aligned split clips a chunk
to the engine's `cache_config.block_size`, its groups' smallest block, B, which is the Mamba
groups' smallest, not the first Mamba group's (7 of the 40 differ with the first's: the layouts
whose first stage holds attention, such as ps21, ps25 and ps33 here); and the replay's config
line takes Mamba groups at a multiple of B under PP (it refused them all before).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import answer_of, assert_matches, config_of, replay_recorded

DATA = Path(__file__).resolve().parent / "data" / "sched_pp_mamba_stages"
CASES = sorted(DATA.glob("*.trace.jsonl"), key=lambda p: int(p.name[2:-12]))


def test_the_cases_are_all_there():
    assert [t.name[:-12] for t in CASES] == [
        "ps1", "ps3", "ps10", "ps14", "ps21", "ps22", "ps24", "ps25", "ps33"]


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_pp_mamba_stages_case(trace: Path):
    cfg = config_of(trace)
    sizes = {g.get("block_size", cfg["block_size"]) for g in cfg["groups"] if g["type"] == "mamba"}
    assert len(sizes) == 2 and cfg["pipeline_parallel_size"] > 1
    expected = answer_of(trace)
    got = replay_recorded(trace)
    assert_matches(expected, got, asyn=True, kv_events=cfg.get("kv_events", False))
    totals = expected[-1]["summary"]["totals"]
    assert sum(e["schedule_called"] for e in got[1]) == totals["steps"]
    assert sum(e["processed"] is not None for e in got[1]) == totals["updates"]


def test_the_split_clips_to_the_smallest_mamba_block():
    """ps33 (full attention and two Mamba2 groups at 64, then two at 8; PP 4): vLLM schedules
    r0's 9-token prompt whole at step 0, its checkpoint at 8 (the bare stages' block, the
    engine's `cache_config.block_size`) written inside the chunk; with the first Mamba group's
    block, 64, as the split's, kvcli scheduled 8."""
    cfg = config_of(DATA / "ps33.trace.jsonl")
    assert [g.get("block_size", 8) for g in cfg["groups"]] == [64, 64, 64, 8, 8]
    first = next(e for e in answer_of(DATA / "ps33.trace.jsonl") if e.get("scheduled"))
    assert first["scheduled"] == {"r0": 9}
