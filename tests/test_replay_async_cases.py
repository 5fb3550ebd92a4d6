"""Engine mode under async scheduling = vLLM 0.33's `AsyncScheduler` behind `EngineCore`'s batch
queue of 2, step for step.

The eight cases of the shared sched-cases-async (copied to tests/data/sched_cases_async/, see
data/README.md) and seven fresh random ones (tests/data/sched_fresh_async/) carry `"async_scheduling": true` in their config line; they are replayed with
no scheduling flag at all (kvcli's default is async, as `vllm serve` on a GPU). Every step line
the oracle wrote for a non-idle step must be ours, field for field (scheduled in vLLM's order,
admitted hits, preempted, finished, free blocks after the schedule and at the end, the batch
processed, whether `schedule()` ran); every request's hit, preemptions, first scheduled and
finish steps; the prefix-cache stats; and with `kv_events` the vLLM event batches, event for
event.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import answer_of, assert_matches, config_of, replay_case

DATA = Path(__file__).resolve().parent / "data"
CASES = sorted((DATA / "sched_cases_async").glob("*.trace.jsonl"))
# random async cases with follow-up prompts (make_cases.py --async; 32 of 32 matched, then 40
# of 40 on 2026-12-03)
FRESH = sorted((DATA / "sched_fresh_async").glob("*.trace.jsonl"))


@pytest.mark.parametrize("trace", CASES + FRESH, ids=lambda p: p.name[:-12])
def test_async_case(trace: Path):
    expected = answer_of(trace)
    run = replay_case(trace)
    assert run[0].config["async_scheduling"] is True
    assert_matches(expected, run, asyn=True, kv_events=config_of(trace).get("kv_events", False))
    s, ours = run[0], run[1]
    summary = expected[-1]["summary"]
    totals = summary["totals"]
    assert sum(e["schedule_called"] for e in ours) == totals["steps"]
    assert sum(e["processed"] is not None for e in ours) == totals["updates"]
    assert sum(not e["schedule_called"] for e in ours) == totals["update_only_steps"]
    assert s.num_free_blocks_end == summary["num_free_blocks_end"]


def test_the_cases_are_all_there():
    assert [t.name.split("_")[0] for t in CASES] == list("abcdefgh")
    assert [t.name.split(".")[0] for t in FRESH] == [f"aseed{n}" for n in
                                                     (102, 108, 111, 122, 124, 125, 5103, 7027)]
    for t in CASES + FRESH:
        assert t.with_name(t.name.replace(".trace.", ".expected.")).exists()


def test_async_effects_the_cases_were_recorded_for():
    """What differs from sync, as the shared README states it (case, step, numbers)."""
    cases = {t.name.split("_")[0]: t for t in CASES}
    _, steps, reqs, _ = replay_case(cases["f"])
    assert reqs["r3"]["preemptions"] == 1
    resumed = [e for e in steps if "r3" in e["admitted"]]
    assert [(e["step"], e["admitted"]["r3"]) for e in resumed[1:]] == [(39, 80)]   # sync: 38, 96
    _, steps, reqs, _ = replay_case(cases["g"])
    s45 = next(e for e in steps if e["step"] == 45)
    assert "r4" in s45["preempted"] and "r4" in s45["finished"]
    assert reqs["r4"]["preemptions"] == 1
    _, steps, reqs, _ = replay_case(cases["h"])
    assert reqs["h2"]["hit_tokens"] == 32                                          # sync: 48
    assert [(e["step"], e["schedule_called"], e["processed"]) for e in steps
            if 22 <= e["step"] <= 24] == [(22, True, 21), (23, True, 22), (24, False, 23)]


def test_sync_is_one_flag_away():
    """`--no-async-scheduling` (the option False) runs vLLM's synchronous Scheduler: the h
    case's follow-up then gets sync's 48-token hit, with no `processed` in the step lines."""
    h = next(t for t in CASES if t.name.startswith("h_"))
    s, steps, reqs, _ = replay_case(h, async_scheduling=False)
    assert s.config["async_scheduling"] is False
    assert reqs["h2"]["hit_tokens"] == 48
    assert "processed" not in steps[0]
