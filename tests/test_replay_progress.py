"""A replay's progress bar counts output tokens (`kvcore.engine.token_progress`): a trace of
one request of 10,000,000 output tokens decoded for ~55 s with the bar at 0/1 (it counted
requests)."""

from __future__ import annotations

import io
import json
import re
import sys

import pytest
from replay_bytes import SAMPLE
from test_progress_warnings import FakeTerminal

from kvcli.app import app
from kvcore.engine import fast_forward
from kvcore.engine.events import JsonlEvents
from kvcore.engine.replay import ReplayOptions, replay
from kvcore.traces import read_trace

LONG = {"timestamp": 0.0, "input_length": 32, "output_length": 5000, "hash_ids": [0]}
# 200,000 prompt tokens need 12,500 blocks: skipped (its 7 output tokens count as done)
TOO_BIG = {"timestamp": 0.0, "input_length": 200000, "output_length": 7,
           "hash_ids": list(range(1, 392))}


def write(tmp_path, lines) -> str:
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return str(p)


@pytest.mark.parametrize("async_scheduling, told", [
    # a step at a time: told every 1,024 steps (the first token comes with the prefill, the
    # rejected request's 7 at its arrival, in the first step)
    (True, [0, 1031, 2055, 3079, 4103, 5007]),
    # the fast-forward runs the decode in stretches of at most 65,536 steps, told after each
    (False, [0, 65544, 131080, 150007, 150007]),
])
def test_the_engine_tells_the_output_tokens_so_far(tmp_path, async_scheduling, told):
    out = 5000 if async_scheduling else 150000
    trace = write(tmp_path, [{**LONG, "output_length": out}, TOO_BIG])
    seen: list[int] = []
    done: list[int] = []
    s = replay(trace, ReplayOptions(async_scheduling=async_scheduling, num_blocks=9500,
                                    skip_bad=True, max_model_len=300000),
               progress=done.append, output_progress=seen.append)
    assert seen == told
    assert done == [1, 1] and (s.finished, s.rejected) == (1, 1)
    assert read_trace(trace).output_tokens == out + 7 == told[-1]


def test_cache_mode_tells_no_output_tokens(tmp_path):
    seen: list[int] = []
    replay(write(tmp_path, [LONG]), ReplayOptions(mode="cache"), output_progress=seen.append)
    assert seen == []


@pytest.mark.pure_python       # (it patches the engine loop's module)
def test_a_stretch_cut_for_the_bar_changes_no_byte(monkeypatch):
    """The fast-forward's stretches are cut short while someone is told the tokens (to 5
    steps here): the same step lines and events, in more stretches."""
    def run(told) -> tuple[bytes, bytes, int]:
        steps, ev = io.BytesIO(), io.BytesIO()
        calls = []
        real = fast_forward.run_stretch
        monkeypatch.setattr("kvcore.engine.engine_loop.run_stretch",
                            lambda loop, k: (calls.append(k), real(loop, k))[1])
        replay(str(SAMPLE), ReplayOptions(async_scheduling=False, num_blocks=4096),
               JsonlEvents(ev), steps_out=steps, output_progress=told)
        return steps.getvalue(), re.sub(rb'"wall_time_s":[0-9.e+-]+', b"", ev.getvalue()), \
            max(calls)

    monkeypatch.setattr(fast_forward, "STRETCH_TOLD", 5)
    steps, events, longest = run(None)
    steps_told, events_told, longest_told = run(lambda n: None)
    assert steps_told == steps and events_told == events
    assert longest > 5 and longest_told == 5


def test_the_replay_bar_counts_output_tokens(tmp_path, monkeypatch):
    """On a terminal: its last frame counts the output tokens, the requests beside."""
    term = FakeTerminal()
    out = io.TextIOWrapper(io.BytesIO(), write_through=True)
    monkeypatch.setattr(sys, "stderr", term)
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setenv("COLUMNS", "200")
    code = app(["replay", write(tmp_path, [LONG]), "--json", "--num-blocks", "1000"],
               standalone_mode=False)
    assert code is None
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", term.getvalue())
    last = plain.rstrip("\r\n").rsplit("\r", 1)[-1]
    assert re.fullmatch(r"replay \(output tokens\) ━+ 5000/5000 100% 0:00:0\d ETA 0:00:00 "
                        r"1/1 requests", last), repr(last)
