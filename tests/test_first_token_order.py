"""The engine loops tell their listener (a live run's metrics, a cluster's router) of first
tokens in schedule order, as vLLM's output processing goes. Under async the loop read them from
the batch's `sampling` set, whose order follows the ids' string hashes: PYTHONHASHSEED then
moved the `--metrics` TTFT histogram's sum in its last bits (151.3728860000004 or
...42 on `traces/multiturn-chat.jsonl --model gemma-3-27b --gpu-memory-gib 62` at 30 s) and
the order of a cluster's same-time first-token deliveries."""

from __future__ import annotations

import json

import pytest

from kvcore.engine.context import ReplayContext
from kvcore.engine.options import ReplayOptions, resolve
from kvcore.engine.replay import engine_loop, run
from kvcore.traces import read_trace

N = 40


class Heard:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, float]] = []

    def first_token(self, rid: str, t_ms: float) -> None:
        self.calls.append(("first", rid, t_ms))

    def finished(self, rid: str, t_ms: float) -> None:
        self.calls.append(("finish", rid, t_ms))


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_first_tokens_are_told_in_schedule_order(tmp_path, async_scheduling):
    # 40 prompts of 40 tokens arrive together: one batch prefills them all (1,600 of the 2,048
    # tokens), so their 40 first tokens come with the same batch's output
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i:02d}", "prompt_token_ids": [
        100 * i + k for k in range(40)], "output_length": 3}) + "\n" for i in range(N)))
    tr = read_trace(str(path))
    opts = ReplayOptions(arrivals="ignore", num_blocks=400, async_scheduling=async_scheduling)
    ctx = ReplayContext(tr, resolve(opts, tr.config), None)
    loop = engine_loop(ctx)
    heard = Heard()
    loop.listener = heard
    run(ctx, loop)
    firsts = [(rid, t) for kind, rid, t in heard.calls if kind == "first"]
    ids = [f"q{i:02d}" for i in range(N)]
    assert [rid for rid, _ in firsts] == ids
    # one batch's output: one time (sync: the step's end, 5 + 0.05 x 1,600 ms; async: the
    # same batch, processed by the next step)
    assert {t for _, t in firsts} == {85.0}
    assert [rid for kind, rid, _ in heard.calls if kind == "finish"] == ids
