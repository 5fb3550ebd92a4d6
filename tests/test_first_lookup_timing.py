"""vLLM fails a chunked local attention group finer than the hit alignment at its first
prefix-cache lookup, not at start-up: a run that never looks up runs. kvcli raises the refusal
when its run looks up (`StartUp.lookup_refusal`, `kvcore.engine.replay.run`), so a replay
stopped before the first request arrives runs, and a request vLLM rejects before scheduling (a
prompt at max_model_len) looks nothing up.

tests/data/first_lookup/ (README there): vLLM's Scheduler over full attention at 32 beside a
chunked group at 8 (the lcm 32), prefix caching on: with no request it runs (0 steps); with one
request arriving at step 5 it idles five steps and fails at the sixth, its lookup.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_sched import answer_of, replay_case
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay
from kvcore.errors import InputError

DATA = Path(__file__).resolve().parent / "data" / "first_lookup"
LATE = DATA / "late.trace.jsonl"
REASON = "KV cache groups with different block sizes are not compatible with chunked local " \
    "attention now"


def test_vllm_fails_at_the_lookup_not_at_start_up():
    assert answer_of(DATA / "empty.trace.jsonl")[-1]["summary"]["num_steps"] == 0
    lines = answer_of(LATE)
    assert [x.get("idle") for x in lines[:-1]] == [True] * 5
    assert lines[-1] == {"error": f"AssertionError: {REASON}"}


def test_a_run_stopped_before_the_first_lookup_runs():
    """Stopped after 5 steps, before the request's arrival, kvcli runs vLLM's five idle steps
    (refused at start-up before); one step more reaches the lookup and is refused there."""
    s, steps, _, _ = replay_case(LATE, max_steps=5)
    assert (s.steps, steps, s.finished) == (5, [], 0)
    with pytest.raises(InputError) as e:
        replay_case(LATE, max_steps=6)
    assert (e.value.field, e.value.line) == ("config.groups", 1)
    assert f"'{REASON}'" in e.value.message


def _trace(tmp_path: Path, prompts: list[tuple[int, int]]) -> Path:
    config = LATE.read_text().splitlines()[0]
    reqs = [json.dumps({"id": f"r{i}", "prompt_token_ids": list(range(1, n + 1)),
                        "output_length": 3, "arrival_step": step})
            for i, (n, step) in enumerate(prompts)]
    path = tmp_path / "t.trace.jsonl"
    path.write_text("\n".join([config, *reqs]) + "\n")
    return path


def test_a_request_rejected_before_scheduling_looks_nothing_up(tmp_path: Path):
    """max_model_len 256: a prompt of 300 tokens is rejected before it is scheduled (skipped
    with skip_bad), so only the later request's lookup fails; when every request is so
    rejected, kvcli's own refusal of a trace with nothing to run is what is said."""
    opts = ReplayOptions(arrivals="step", skip_bad=True)
    with pytest.raises(InputError) as e:
        replay(str(_trace(tmp_path, [(300, 0), (40, 3)])), opts)
    assert f"'{REASON}'" in e.value.message
    with pytest.raises(InputError) as e:
        replay(str(_trace(tmp_path, [(300, 0), (280, 3)])), opts)
    assert e.value.message == "no request fits: prompt of 300 tokens >= max_model_len 256"


@pytest.mark.parametrize("command", [["replay", "--mode", "cache"], ["cluster"]])
def test_refused_mid_run_in_one_line(command: list[str], tmp_path: Path):
    """Refused when the run looks up, after the start-up's warnings were decided (cache mode
    warns of the config line's scheduler options) and a cluster's replicas were built: still
    the one line, exit 2, nothing on stdout, no output file."""
    config = LATE.read_text().splitlines()[0]
    trace = tmp_path / "t.trace.jsonl"
    trace.write_text("\n".join([config, *(json.dumps(
        {"id": f"r{i}", "prompt_token_ids": list(range(1 + i, 41 + i)), "output_length": 3,
         "timestamp": 10.0 * i}) for i in range(3))]) + "\n")
    out = tmp_path / "out.jsonl"
    flag = "--requests" if command[0] == "replay" else "--decisions"
    r = CliRunner().invoke(app, [*command, str(trace), flag, str(out)])
    assert (r.exit_code, r.stdout, out.exists()) == (2, "", False), r.output
    assert len(r.stderr.splitlines()) == 1
    assert r.stderr.startswith(f"error: {trace}:1: field 'config.groups': KV cache groups")


def test_a_sweep_stops_before_any_job(tmp_path: Path):
    """A sweep's jobs run their requests, so each would fail at its first lookup: the sweep
    stops while it plans, one line, before its results file is opened (as for every start-up
    refusal: tests/test_sweep_startup.py)."""
    results = tmp_path / "r.jsonl"
    r = CliRunner().invoke(app, ["sweep", "--trace", str(LATE), "--command", "replay",
                                 "--results", str(results), "--jobs", "1",
                                 "--set", "max_num_seqs=2,4"])
    assert (r.exit_code, results.exists()) == (2, False), r.output
    assert r.stderr.splitlines() == [r.stderr.strip()]
    assert r.stderr.startswith(f"error: {LATE}:1: field 'config.groups': KV cache groups")
