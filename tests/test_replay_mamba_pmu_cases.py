"""Mamba groups with vLLM's --prefix-match-unit (a config line's `prefix_match_unit`).

tests/data/sched_mamba/p16_*: make_cases.py's a, b, d and f (and their Mamba2 versions) with
`"prefix_match_unit": 16`, and four random cases (make_random.py --prefix-match-unit), answered
by the real Scheduler and AsyncScheduler through tests/data/oracle_mamba.py (README there). With
f's block of 16 the unit is the block: vLLM's answers are f's own. Elsewhere the unit is finer
than the block and vLLM makes partial-block hits (a: 576 hit tokens, not 560; b: 144, not 80):
kvcli replays every one exactly, sync and async (before, it refused them in one line).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import answer_of, assert_matches, config_of, replay_case

from kvcore.engine.replay import ReplayOptions, replay

DATA = Path(__file__).resolve().parent / "data" / "sched_mamba"
BLOCK_UNIT = sorted(DATA.glob("p16_*f_block16.trace.jsonl"))
PARTIAL = sorted(t for t in DATA.glob("p[0-9]*_*.trace.jsonl") if t not in BLOCK_UNIT)


def test_the_cases_are_all_there():
    assert [t.name[:-12] for t in BLOCK_UNIT] == ["p16_f_block16", "p16_m2_f_block16"]
    assert [t.name[:-12] for t in PARTIAL] == [
        "p16_a_shared_long", "p16_b_shared_short", "p16_d_budget_below_block",
        "p16_m2_a_shared_long", "p16_m2_b_shared_short", "p16_m2_d_budget_below_block",
        "p16_m2seed122", "p16_m2seed13", "p16_mseed13", "p8_mseed219"]


@pytest.mark.parametrize("asyn", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("trace", BLOCK_UNIT, ids=lambda p: p.name[:-12])
def test_a_unit_equal_to_the_block_replays_as_vllm(trace: Path, asyn: bool):
    assert config_of(trace)["prefix_match_unit"] == 16 == config_of(trace)["block_size"]
    assert_matches(answer_of(trace, "async.expected" if asyn else "expected"),
                   replay_case(trace, async_scheduling=asyn), asyn=asyn,
                   kv_events=config_of(trace).get("kv_events", False))


@pytest.mark.parametrize("asyn", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("trace", PARTIAL, ids=lambda p: p.name[:-12])
def test_partial_block_hits_replay_as_vllm(trace: Path, asyn: bool):
    """Step lines, KV events (where the case has them), hits, preemptions and stats, exactly.
    The random ones (README): unit 16 at block 80 and 48, unit 8 at block 80, pools of 13-47
    blocks with preemptions, KV events, Mamba2 at retention 0 and 192 (4-block segments)."""
    assert config_of(trace)["prefix_match_unit"] < config_of(trace)["block_size"]
    assert_matches(answer_of(trace, "async.expected" if asyn else "expected"),
                   replay_case(trace, async_scheduling=asyn), asyn=asyn,
                   kv_events=config_of(trace).get("kv_events", False))


def _hits(name: str) -> dict[str, int]:
    summary = answer_of(DATA / f"{name}.trace.jsonl")[-1]["summary"]
    return {r["id"]: r["num_cached_tokens"] for r in summary["requests"]}


def test_vllm_hits_inside_a_block_in_the_recorded_answers():
    """What kvcli will have to match: a resent prompt hits its prompt's last 16-token boundary
    inside a block (a4, a0's 257 tokens again: 256, not 240 at the block boundary; b4, b2's
    160 tokens and 45 more: 144, the partial tail b2 registered, not 80)."""
    assert _hits("p16_a_shared_long") == {"a0": 0, "a1": 0, "a2": 160, "a3": 160, "a4": 256}
    assert _hits("a_shared_long")["a4"] == 240
    assert _hits("p16_b_shared_short")["b4"] == 144 and _hits("b_shared_short")["b4"] == 80


def test_cache_mode_frees_the_copies_held_ends():
    """Cache mode (a request a step, no scheduler): a4 hits a0's Mamba2 checkpoint at 256,
    inside a block, through a copy; the copy's held ends go after the allocation as after a
    schedule(), so the pool is whole again at the end (it ended 16 blocks short before)."""
    s = replay(str(DATA / "p16_m2_a_shared_long.trace.jsonl"), ReplayOptions(mode="cache"))
    assert (s.hit_tokens, s.num_free_blocks_end, s.num_blocks) == (256, 399, 400)
