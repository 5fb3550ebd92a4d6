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

from pathlib import Path

import pytest
from oracle_sched import answer_of, assert_matches, config_of, replay_case

HERE = Path(__file__).resolve().parent
RECORDED = HERE / "data" / "sched_cases"       # see data/README.md
FRESH = HERE / "data" / "sched_fresh"

CASES = sorted(RECORDED.glob("*.trace.jsonl")) + sorted(FRESH.glob("*.trace.jsonl"))


@pytest.mark.parametrize("trace", CASES, ids=lambda p: f"{p.parent.name}/{p.name[:-12]}")
def test_sched_case(trace: Path):
    # The oracle ran vLLM's synchronous Scheduler; kvcli's default is async (vLLM's on a GPU).
    assert_matches(answer_of(trace), replay_case(trace, async_scheduling=False), asyn=False,
                   kv_events=config_of(trace).get("kv_events", False))


def test_fresh_cases_exist():
    # The fixture folder must hold answered cases (regenerate with make_cases.py + the oracle).
    fresh = sorted(FRESH.glob("*.trace.jsonl"))
    # seeds 1-16 (8 kept), 5000-5039 (seed5025 kept), 7000-7019 and 7060-7079 (seed7069 kept);
    # lseed72908: make_spaces.py L, the fidelity campaign of 2026-12-05 (358 preemptions)
    assert [t.name.split(".")[0] for t in fresh] == [
        "lseed72908", "seed10", "seed11", "seed13", "seed14", "seed15", "seed3", "seed5025",
        "seed6", "seed7", "seed7069"]
    for t in fresh:
        answer = t.with_name(t.name.replace(".trace.", ".expected."))
        # (a large answer is kept gzipped; load_lines reads either)
        assert answer.exists() or answer.with_name(answer.name + ".gz").exists()


def test_recorded_cases_exist():
    recorded = sorted(RECORDED.glob("*.trace.jsonl"))
    assert [t.name.split("_")[0] for t in recorded] == ["a", "b", "c", "d", "e"]
    for t in recorded:
        assert t.with_name(t.name.replace(".trace.", ".expected.")).exists()
