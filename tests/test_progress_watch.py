"""A replay that stops making progress is stopped (`kvcore.engine.progress_watch`), a replay
and a cluster's replica alike, and a healthy one is not.

The kvcore bug it stops: speculative decoding's verification without the rollback of the
rejected drafts' computed tokens (the replay looped until killed: the previous session's
mutation run)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_spec_budget_warning import vllm_words
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine import progress_watch as watch
from kvcore.engine import spec_decode

DATA = Path(__file__).parent / "data"
SPEC = str(DATA / "sched_spec" / "seed90100.trace.jsonl")
PREEMPTING = str(DATA / "sched_spec" / "cases_async_b_preemption.trace.jsonl")


def _verify_without_the_rollback(sched, out, req, stale):
    d = out.spec.get(req.request_id, 0)
    if not d:
        return 1
    a = 0 if req.request_id in out.admitted else sched.accept(req, d)
    if not stale and req.num_output_placeholders > 0:
        req.num_output_placeholders -= d - a
    sched.spec_stats.add(d, a)
    return 1 + a


@pytest.mark.parametrize("command", [["replay"], ["cluster", "--replicas", "2"]])
def test_a_run_that_gets_nowhere_is_stopped(monkeypatch, command):
    monkeypatch.setattr(watch, "NO_PROGRESS_STEPS", 20_000)
    monkeypatch.setattr(spec_decode, "verify", _verify_without_the_rollback)
    r = CliRunner().invoke(app, [*command, SPEC, "--json"])
    # (one line after the run's warnings, exit 1, no traceback: the state is in the message)
    assert r.exit_code == 1 and r.stdout == "" and "Traceback" not in r.output, r.output
    message = r.stderr.splitlines()[-1]
    assert message.startswith("error: no progress in 20,480 steps (steps 1,024 to 21,504): ")
    assert "none finished and none computed a token beyond its most: a kvcli bug" in message


def test_healthy_runs_progress_within_two_checks(monkeypatch):
    # (a decode gains a token each step; a preempted request climbs back at the budget)
    monkeypatch.setattr(watch, "NO_PROGRESS_STEPS", 2048)
    for trace in (SPEC, PREEMPTING, str(DATA.parent.parent / "traces" / "multiturn-chat.jsonl")):
        r = CliRunner().invoke(app, ["replay", trace, "--json"])
        assert r.exit_code == 0, (trace, r.exception)


def test_requests_preempted_in_turn_with_no_one_running_between_are_stopped(monkeypatch):
    """ppu359 (tests/data/sched_spec_pp_mamba/README.md): at PP 4 r0 and r1 take turns, each
    admitted, scheduled three chunks and preempted, a step with no one running between; vLLM
    spins in it too. Every third check saw no one running and started the count again."""
    monkeypatch.setattr(watch, "NO_PROGRESS_STEPS", 20_000)
    trace = str(DATA / "sched_spec_pp_mamba" / "ppu359.livelock.jsonl")
    r = CliRunner().invoke(app, ["replay", trace, "--json", "--arrivals", "step"])
    # (after vLLM's start-up warning: its drafts on a step budget of 48 tokens)
    first, *rest = r.stderr.splitlines()
    assert r.exit_code == 1 and first == f"warning: {vllm_words(48)}" and len(rest) == 1, r.output
    assert rest[0].startswith("error: no progress in 20,480 steps (steps 1,024 to 21,504): "
                              "1 request(s) running (r1: 96 of 156 tokens computed)")


def test_a_loop_every_check_sees_with_no_one_running_is_stopped(monkeypatch):
    """wemaseed1763 (tests/data/sched_wide/README.md): EAGLE-3 over two Mamba groups, async,
    a 21-block pool: a request admitted and preempted every step, vLLM's loop too (its first
    2,900 steps equal kvcli's); every check landed on a step with no one running, which ended
    the check before its count (the replay ran on until killed)."""
    monkeypatch.setattr(watch, "NO_PROGRESS_STEPS", 20_000)
    trace = str(DATA / "sched_wide" / "wemaseed1763.livelock.jsonl")
    r = CliRunner().invoke(app, ["replay", trace, "--json", "--arrivals", "step"])
    assert r.exit_code == 1 and r.stdout == "", r.output
    assert r.stderr.splitlines()[-1] == (
        "error: no progress in 20,480 steps (steps 1,024 to 21,504): none running and 8 "
        "waiting at this step, none finished and none computed a token beyond its most: a "
        "kvcli bug, or a loop vLLM would spin in too; please report it with the trace and the "
        "options")
