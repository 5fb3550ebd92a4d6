"""The wide fuzz round of 2026-12-08 (tests/data/sched_wide/README.md): cases that draw many of
vLLM 0.33's scheduler knobs at once (budget and `max_num_seqs` edges, long-prefill thresholds,
priorities, tiny pools, requests stopped at `max_model_len`, follow-ups) over hybrid or Mamba
groups, n-gram or EAGLE-3 drafts, LoRA domains and pipeline parallelism, answered by the real
Scheduler / AsyncScheduler through the oracle harness each kind needs.

Replayed with `--arrivals step` in the mode each was recorded in: every step line, every
request's hit / preemptions / first and last step, the prefix-cache stats, the KV event batches
(where on) and, with drafts, the drafts each step verified and vLLM's SpecDecodingStats.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from oracle_sched import answer_of, assert_matches, check_spec_case, config_of, replay_case

from kvcore.engine.replay import ReplayOptions, replay
from kvcore.errors import InputError

DATA = Path(__file__).resolve().parent / "data" / "sched_wide"
ALL = sorted(DATA.glob("*.trace.jsonl"))
# the cases vLLM answered to the end (the others: it failed its assertion midway)
CASES = [t for t in ALL if "error" not in answer_of(t)[-1]]


def name(p: Path) -> str:
    return p.name.split(".")[0]


@pytest.mark.parametrize("trace", CASES, ids=name)
def test_wide_case(trace: Path):
    cfg = config_of(trace)
    if "num_speculative_tokens" in cfg:
        check_spec_case(trace)
        return
    asyn = cfg.get("async_scheduling", False)
    run = replay_case(trace, async_scheduling=asyn)
    # a batch queue's lines: async scheduling, or pipeline parallelism (sched_pp's oracle)
    assert_matches(answer_of(trace), run, asyn=asyn or cfg.get("pipeline_parallel_size", 1) > 1,
                   kv_events=cfg.get("kv_events", False))


def test_the_cases_are_all_there():
    assert [name(t) for t in ALL] == KEPT


def test_a_cut_padding_whose_allocation_fails_is_no_assertion():
    """wshuaseed2149 (async, K 3, threshold 2, a chunked-local and a full group, 20 blocks):
    after its preemption at step 271, w2149r20 (57 tokens) waits with 56 of them cached, one
    to compute: padded to 1 + 3, cut to 2 by the threshold. At step 272 its allocation fails
    first, so vLLM's waiting loop breaks there (no assertion); at 277, blocks of its prefix
    evicted, it is admitted with 40 cached and 2 to compute, and the run goes on to step 366.
    kvcli stopped at step 272 with the assertion's error."""
    trace = DATA / "wshuaseed2149.trace.jsonl"
    got = check_spec_case(trace)
    lines = {e["step"]: e for e in got[1]}
    assert [lines[s]["admitted"] for s in (272, 276, 277)] == [{}, {}, {"w2149r20": 40}]
    assert lines[277]["scheduled"]["w2149r20"] == 2
    r20 = got[2]["w2149r20"]
    assert (r20["preemptions"], r20["finish_step"]) == (14, 366)


@pytest.mark.parametrize("case", ["mamba_cut_padding", "mamba_cut_padding_async"])
def test_a_mamba_split_drops_a_cut_padding(case: str):
    """c repeats a's 33-token prompt: 32 cached (two blocks of 16, the Mamba state at the
    boundary), one to compute, padded to 1 + 3, cut to 2 by the threshold. The Mamba split
    comes before vLLM's assertion and drops the padding: c is admitted at step 30 with one
    token, no drafts, in both modes. kvcli stopped there with the assertion's error."""
    got = check_spec_case(DATA / f"{case}.trace.jsonl")
    step = next(e for e in got[1] if e["step"] == 30)
    assert (step["admitted"], step["scheduled"]) == ({"c": 32}, {"b": 2, "c": 1})
    assert "c" not in step.get("drafts", {})


def test_where_vllm_asserts_the_replay_stops_at_that_step():
    """wshuseed2150 (sync, K 5, threshold 2): vLLM fails its assertion in step 9, admitting
    w2150r1's padded one-token admission cut to 2; kvcli writes vLLM's 9 step lines, then
    stops there, naming the threshold."""
    trace = DATA / "wshuseed2150.trace.jsonl"
    expected = answer_of(trace)
    assert expected[-1] == {"error": "AssertionError: "}
    steps = io.BytesIO()
    with pytest.raises(InputError) as err:
        replay(str(trace), ReplayOptions(arrivals="step"), None, steps_out=steps)
    assert (err.value.field, err.value.line) == ("config.long_prefill_token_threshold", 1)
    assert err.value.message.startswith("2 cuts the one-token admission of request 'w2150r1', "
                                        "padded to 1 + 5 tokens")
    ours = [json.loads(x) for x in steps.getvalue().splitlines()]
    assert [(e["step"], e["scheduled"]) for e in ours] == \
        [(e["step"], e["scheduled"]) for e in expected[:-1]]


def test_requests_stop_at_max_model_len_in_every_case():
    """Each kept case has requests that asked for more output than max_model_len leaves and
    were stopped there by vLLM (prompt + outputs = max_model_len), and preempts."""
    for trace in CASES:
        if name(trace) in FOCUSED:
            continue
        mml = config_of(trace)["max_model_len"]
        summary = answer_of(trace)[-1]["summary"]
        capped = [r for r in summary["requests"]
                  if r["prompt_len"] + r["num_output_tokens"] == mml]
        # (sched_pp's oracle writes no finish_reason)
        assert capped and all(r.get("finish_reason", "length") == "length" for r in capped), \
            name(trace)
        assert summary["totals"]["preemptions"] >= 5, name(trace)


# the assertion's cases (tests above)
FOCUSED = ("mamba_cut_padding", "mamba_cut_padding_async", "wshuaseed2149", "wshuseed2150")
KEPT = ["mamba_cut_padding", "mamba_cut_padding_async", "weaseed1505", "wehseed358",
        "whaseed1109", "whseed1128", "wlhseed446", "wmLaseed1681", "wmseed388", "wp3haseed555",
        "wsLuseed2294", "wshLaseed1481", "wshuaseed2149", "wshuseed2150"]
