"""Mamba groups at the scheduler level = vLLM 0.33.0's Scheduler in ``align`` mode.

The seven cases of tests/data/sched_mamba/ (README there: Jamba's layout of seven Mamba groups and
one full-attention group at block 80, shared prefixes, small budgets, preemption) were answered
by the real Scheduler and AsyncScheduler through tests/data/oracle_mamba.py. Replayed with
`--arrivals step` in each mode, every step line, every request's hit, preemptions, first and last
step, the prefix-cache stats and (a, e) the vLLM event batches must be the oracle's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import answer_of, assert_matches, config_of, mamba_request, replay_case

from kvcore.engine.mamba_split import mamba_aligned_split

DATA = Path(__file__).resolve().parent / "data" / "sched_mamba"
CASES = sorted(DATA.glob("[a-z]_*.trace.jsonl"))
# random cases (make_random.py, seeds 1-60: all 120 runs matched once hits on a state cached in
# the same step waited, as below); these three failed before that
FRESH = sorted(DATA.glob("mseed*.trace.jsonl"))
SYNC_KEYS = ("step", "scheduled", "admitted", "preempted", "finished", "num_free_blocks")


def case(name: str) -> Path:
    return next(t for t in CASES if t.name.startswith(name))


def test_the_cases_are_all_there():
    assert [t.name.split("_")[0] for t in CASES] == list("abcdefg")
    assert [t.name.split(".")[0] for t in FRESH] == ["mseed32", "mseed33", "mseed7865", "mseed9"]


@pytest.mark.parametrize("prompt, start, n, junction, budget, want", [
    (257, 0, 257, 0, 512, 240),   # a0 step 0: not past the last block boundary before the end
    (257, 240, 17, 0, 512, 17),   # a0 step 1: the prompt's last chunk runs to its end
    (330, 0, 330, 160, 512, 160),  # a1 step 4: stops at the shared-prefix junction
    (415, 0, 100, 0, 100, 80),    # c0 step 0: a chunk short of the end is floored to a block
    (310, 0, 64, 0, 64, 64),      # d0 step 0: a block wider than the budget: sub-block
    (310, 64, 64, 0, 64, 16),     # d0 step 1: a chunk starting mid-block stops at its end
    (160, 0, 160, 0, 512, 80),    # e0 step 0
    (66, 0, 66, 0, 96, 64),       # f0 (block 16 below)
])
def test_the_split_clips_as_recorded(prompt, start, n, junction, budget, want):
    bs = 16 if prompt == 66 else 80
    assert mamba_aligned_split(mamba_request(prompt, start, junction), n, start, bs, budget) == want


def test_decodes_are_not_clipped():
    r = mamba_request(257, 257)
    r.num_tokens = 258                           # one output token appended
    assert mamba_aligned_split(r, 1, 257, 80, 512) == 1


def test_the_first_steps_of_a_shared_prefix_case_are_vllms():
    """a_shared_long, sync: steps 0-5 (a0's 240 + 17, a1's junction stop at 160) line for line."""
    t = case("a_")
    _, ours, _, _ = replay_case(t, async_scheduling=False)
    theirs = [e for e in answer_of(t)[:-1] if e["scheduled"] or e["preempted"]]
    assert [{k: e[k] for k in SYNC_KEYS} for e in ours[:6]] == \
        [{k: e[k] for k in SYNC_KEYS} for e in theirs[:6]]
    assert [e["scheduled"] for e in ours[:6]] == [
        {"a0": 240}, {"a0": 17}, {"a0": 1}, {"a0": 1}, {"a0": 1, "a1": 160},
        {"a0": 1, "a1": 160}]


@pytest.mark.parametrize("name", ["a_", "e_", "f_"])
def test_every_step_frees_what_vllm_frees(name):
    """An aligned prefill leaves null entries between the states it keeps (a junction's, the
    last chunk's): vLLM's skip frees each of them once the request computes past it, where an
    attention-style walk stops at the first null (a, step 6: 380 free blocks, not 373: a1's
    junction state in each of the seven Mamba groups)."""
    t = case(name)
    _, ours, _, _ = replay_case(t, async_scheduling=False)
    theirs = [e for e in answer_of(t)[:-1] if e["scheduled"] or e["preempted"]]
    assert [{k: e[k] for k in SYNC_KEYS} for e in ours] == \
        [{k: e[k] for k in SYNC_KEYS} for e in theirs]
    if name == "a_":
        assert [e["num_free_blocks"] for e in ours[5:8]] == [370, 380, 387]


@pytest.mark.parametrize("asyn", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("trace", CASES + FRESH, ids=lambda p: p.name[:-12])
def test_mamba_case(trace: Path, asyn: bool):
    assert_matches(answer_of(trace, "async.expected" if asyn else "expected"),
                   replay_case(trace, async_scheduling=asyn), asyn=asyn,
                   kv_events=config_of(trace).get("kv_events", False))


def test_only_states_a_later_hit_can_start_from_are_cached_at_retention_0():
    """c and g are the same requests: at vLLM's default retention 0 c0's state at 240 is
    neither its replay boundary (414, floored: 400) nor a junction, so it is not cached and c1
    (sharing c0's first 240 tokens) hits nothing; dense retention (g) caches it: 240."""
    hits = {}
    for name in ("c_", "g_"):
        s, _, reqs, _ = replay_case(case(name), async_scheduling=False)
        hits[name] = (s.hit_tokens, reqs["c1"]["hit_tokens"], reqs["c2"]["hit_tokens"])
    assert hits == {"c_": (240, 0, 240), "g_": (480, 240, 240)}


def test_a_state_cached_in_this_step_is_not_hit_until_the_next():
    """mseed9: r0's first chunk (80 tokens) caches its state at 80 in step 0; r1, waiting
    behind it with the same first block, may not adopt a state the worker has not written
    yet (vLLM's cached_blocks_this_step: the allocation is refused), so it is admitted in step
    1 with that 80-token hit, not in step 0."""
    _, ours, reqs, _ = replay_case(next(t for t in FRESH if t.name.startswith("mseed9.")),
                                   async_scheduling=False)
    assert [(e["scheduled"], e["admitted"]) for e in ours[:2]] == [
        ({"r0": 80}, {"r0": 0}), ({"r0": 54, "r1": 54}, {"r1": 80})]
    assert (reqs["r1"]["hit_tokens"], reqs["r1"]["first_scheduled_step"]) == (80, 1)
