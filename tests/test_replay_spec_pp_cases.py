"""Speculative decoding with pipeline parallelism = vLLM 0.33's schedulers behind `EngineCore`'s
batch queue of PP batches (PP + 1 under async scheduling) with ngram, EAGLE and MTP drafts, step
for step with their KV events (tests/data/sched_spec_pp/: oracle_spec_pp.py's answers; DESIGN.md
there says how vLLM hands drafts back with batches in flight).

What these cases pin: under sync PP the drafts of the batch just scheduled reach the scheduler
in the same engine step, before its output (`async_loop.py`), so a request whose last batch
verified fewer than K drafts (a prefill's last chunk, a cut decode) is scheduled again while
that batch is in flight; and an EAGLE or MTP runner proposes no drafts after a batch none of
whose requests can use them (`skip_drafts`, `spec_decode.note_drafts_needed`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_sched import answer_of, check_spec_case, config_of, replay_case, replay_recorded

from kvcore.errors import InputError

DATA = Path(__file__).resolve().parent / "data"
CASES = sorted((DATA / "sched_spec_pp").glob("*.trace.jsonl"))
RAN = [t for t in CASES if "error" not in answer_of(t)[0]]


def expected_of(trace: Path) -> list[dict]:
    # (mtp's target is the oracle's tiny DeepSeek-V3: one MLA group, replayed as one
    # full-attention group with the same blocks, so the events' kind is read as ours)
    return json.loads(json.dumps(answer_of(trace)).replace('"mla_attention"',
                                                           '"full_attention"'))


@pytest.mark.parametrize("trace", RAN, ids=lambda p: p.name[:-12])
def test_spec_pp_case(trace: Path):
    got = check_spec_case(trace, expected_of(trace))
    cfg = config_of(trace)
    assert got[0].config["pipeline_parallel_size"] == cfg["pipeline_parallel_size"]
    totals = answer_of(trace)[-1]["summary"]["totals"]
    assert sum(e["schedule_called"] for e in got[1]) == totals["steps"]
    assert sum(e["processed"] is not None for e in got[1]) == totals["updates"]


def test_skip_drafts_leaves_a_finishing_request_unscheduled():
    """sp142 (eagle, sync, PP 3), step 23: s142r7 samples its last token in batch 21, whose
    requests are all sure to finish or mid-prefill: vLLM's runner proposes none after it, so
    r7 is not scheduled again for drafts while its output is in flight (with K drafts it
    would be, for the 2 it did not verify)."""
    trace = DATA / "sched_spec_pp" / "sp142.trace.jsonl"
    line = next(e for e in check_spec_case(trace)[1] if e["step"] == 23)
    assert line["scheduled"] == {"s142r3": 3, "s142r5": 3, "s142r6": 3}


def test_a_pool_vllm_refuses_at_that_depth_is_refused():
    """sp111: full + two sliding windows at PP 2 (sync) with ngram: 2 x 128 tokens in flight
    make one request of 400 need 240 blocks; the pool has 148 usable."""
    trace = DATA / "sched_spec_pp" / "sp111.trace.jsonl"
    assert "240 blocks" in answer_of(trace)[0]["error"]
    with pytest.raises(InputError, match="240 blocks"):
        replay_recorded(trace)


def test_the_cases_are_all_there():
    assert [t.name.split(".")[0] for t in CASES] == [
        "sp102", "sp111", "sp113", "sp133", "sp141", "sp142", "sp148", "sp209", "sp216",
        "sp225", "sp250", "spm126", "spm206"]


def test_sync_pp_waits_for_each_batchs_drafts():
    """vLLM's post_step blocks on the drafts of the batch just scheduled, which the last stage
    gives once it has run it: under sync PP with drafts no two batches share the pipeline.
    sp142 (PP 3) on a clock of 10 ms a batch: 0.653 s, where pipelined batches (a stage's
    3.3 ms apart) would take 0.227 s."""
    trace = DATA / "sched_spec_pp" / "sp142.trace.jsonl"
    s, lines, _, _ = replay_case(trace, async_scheduling=False, step_overhead_ms=10.0,
                                 prefill_ms_per_token=0.0, decode_ms_per_seq=0.0)
    assert sum(1 for e in lines if e["scheduled"]) == 65
    assert s.sim_time_s == 0.653333


def test_async_pp_runs_the_drafter_on_the_last_stage(monkeypatch):
    """vLLM builds the speculator on the last PP rank only (v1/worker/gpu/model_runner.py
    :298-305): of a batch's time the drafter's part is the last stage's, the rest split among
    the stages. spm206 (PP 3, async, mtp) on a clock of 12 ms a batch: stages of 4 ms pipeline
    to one batch every 4 ms; with 6 ms of it the drafter's, stages of 2, 2 and 8 ms, one every
    8 ms."""
    from kvcore.engine.cost import CostModel

    trace = DATA / "sched_spec_pp" / "spm206.trace.jsonl"
    clock = {"step_overhead_ms": 12.0, "prefill_ms_per_token": 0.0, "decode_ms_per_seq": 0.0}
    even, lines, _, _ = replay_case(trace, async_scheduling=True, **clock)
    monkeypatch.setattr(CostModel, "last_draft_ms", 6.0, raising=False)
    drafted, lines2, _, _ = replay_case(trace, async_scheduling=True, **clock)
    assert [e["scheduled"] for e in lines] == [e["scheduled"] for e in lines2]
    assert (even.sim_time_s, drafted.sim_time_s) == (1.016, 2.02)
