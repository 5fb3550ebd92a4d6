"""Engine mode = vLLM 0.33's real Scheduler, step for step.

Each case is a token-id trace with a `{"config": ...}` line and the answer recorded from vLLM
0.33.0's own `Scheduler` by the scheduler oracle (`shared/oracle/tool/sched.py`): the five cases
of the shared sched-cases (copied to tests/data/sched_cases/) and fresh ones in
tests/data/sched_fresh/ (made by `make_cases.py` there). Replayed with `--arrivals step` and the
case's config, our `--steps` lines must carry the same scheduled / admitted / preempted /
finished / num_free_blocks, our
`--requests` lines the same hit tokens, preemptions, first scheduled step and finish step, and,
where the case has `kv_events`, `--events-format vllm` the same event batches, event for event.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from kvcore.engine.events import VllmEvents
from kvcore.engine.replay import ReplayOptions, replay

HERE = Path(__file__).resolve().parent
RECORDED = HERE / "data" / "sched_cases"       # see data/README.md
FRESH = HERE / "data" / "sched_fresh"

CASES = sorted(RECORDED.glob("*.trace.jsonl")) + sorted(FRESH.glob("*.trace.jsonl"))


def _load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("trace", CASES, ids=lambda p: f"{p.parent.name}/{p.name[:-12]}")
def test_sched_case(trace: Path):
    expected = _load(trace.with_name(trace.name.replace(".trace.", ".expected.")))
    summary = expected[-1]["summary"]
    oracle_steps = expected[:-1]
    cfg = json.loads(trace.read_text().splitlines()[0])["config"]

    steps, reqs, events = io.BytesIO(), io.BytesIO(), io.BytesIO()
    sink = VllmEvents(events) if cfg.get("kv_events") else None
    # The oracle ran vLLM's synchronous Scheduler; kvcli's default is async (vLLM's on a GPU).
    s = replay(str(trace), ReplayOptions(arrivals="step", async_scheduling=False), sink,
               steps_out=steps, requests_out=reqs)

    ours = [json.loads(x) for x in steps.getvalue().splitlines()]
    # Steps where nothing was scheduled or preempted may be left out (idle / flush steps).
    theirs = [e for e in oracle_steps if e["scheduled"] or e["preempted"]]
    keys = ("step", "scheduled", "admitted", "preempted", "finished", "num_free_blocks")
    assert [{k: e[k] for k in keys} for e in ours] == [{k: e[k] for k in keys} for e in theirs]
    # The scheduled dict's order is vLLM's (running first, then admitted).
    assert [list(e["scheduled"]) for e in ours] == [list(e["scheduled"]) for e in theirs]

    by_id = {r["id"]: r for r in (json.loads(x) for x in reqs.getvalue().splitlines())}
    for r in summary["requests"]:
        o = by_id[r["id"]]
        assert (o["hit_tokens"], o["preemptions"], o["first_scheduled_step"], o["finish_step"]) \
            == (r["num_cached_tokens"], r["num_preemptions"], r["first_scheduled_step"],
                r["finish_step"]), r["id"]

    # Prefix-cache stats: first admissions vs vLLM's, re-admissions vs preempted_*.
    pcs = summary["prefix_cache_stats"]
    assert (s.counted_requests, s.prompt_tokens, s.hit_tokens) == \
        (pcs["requests"], pcs["queries"], pcs["hits"])
    assert (s.preempted_admissions, s.preempted_prompt_tokens, s.preempted_hit_tokens) == \
        (pcs["preempted_requests"], pcs["preempted_queries"], pcs["preempted_hits"])
    assert s.preemptions == summary["totals"]["preemptions"]
    assert s.steps == summary["num_steps"]

    if cfg.get("kv_events"):
        ours_ev = [json.loads(x)["events"] for x in events.getvalue().splitlines()]
        theirs_ev = [e["events"] for e in oracle_steps if e.get("events")]
        assert len(ours_ev) == len(theirs_ev)
        for i, (a, b) in enumerate(zip(ours_ev, theirs_ev)):
            assert a == b, f"batch {i}"


def test_fresh_cases_exist():
    # The fixture folder must hold answered cases (regenerate with make_cases.py + the oracle).
    fresh = sorted(FRESH.glob("*.trace.jsonl"))
    assert len(fresh) >= 4
    for t in fresh:
        assert t.with_name(t.name.replace(".trace.", ".expected.")).exists()


def test_recorded_cases_exist():
    recorded = sorted(RECORDED.glob("*.trace.jsonl"))
    assert [t.name.split("_")[0] for t in recorded] == ["a", "b", "c", "d", "e"]
    for t in recorded:
        assert t.with_name(t.name.replace(".trace.", ".expected.")).exists()
