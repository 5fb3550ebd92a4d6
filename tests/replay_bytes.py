"""Every output of one replay as bytes, for the tests that prove a speed path exact by
comparing a replay with it and without it (`test_fast_forward.py`, `test_decode_windows.py`)."""

from __future__ import annotations

import gzip
import io
import json
import random
import re
from pathlib import Path

from kvcore.engine.engine_loop import EngineLoop
from kvcore.engine.events import JsonlEvents
from kvcore.engine.replay import ReplayOptions, replay
from kvcore.engine.vllm_events import VllmEvents

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parent / "traces" / "multiturn-chat.jsonl"
CONVERSATION = HERE / "data" / "traces" / "mooncake" / "conversation_trace.jsonl.gz"


def replay_bytes(trace: str, opts: ReplayOptions, events: str, monkeypatch, *,
                 counting: tuple[type, str], fast_forward: bool = True,
                 decode_windows: bool = True) -> tuple[tuple, int]:
    """(step lines, request lines, the event stream (`events`: jsonl, vllm or none), the summary),
    both wall times left out, and how many calls ``counting`` (a class and a method) got."""
    monkeypatch.setattr(EngineLoop, "fast_forward", fast_forward)
    monkeypatch.setattr(EngineLoop, "decode_windows", decode_windows)
    calls = []
    cls, name = counting
    real = getattr(cls, name)
    monkeypatch.setattr(cls, name,
                        lambda self, *a, **kw: (calls.append(1), real(self, *a, **kw))[1])
    steps, reqs, ev = io.BytesIO(), io.BytesIO(), io.BytesIO()
    sink = (JsonlEvents(ev) if events == "jsonl" else VllmEvents(ev) if events == "vllm"
            else None)
    s = replay(trace, opts, sink, steps_out=steps, requests_out=reqs)
    d = s.to_dict()
    d.pop("wall_time_s")
    # the event stream's end line carries the summary: its wall time is the one difference
    stream = re.sub(rb'"wall_time_s":[0-9.e+-]+', b'"wall_time_s":0', ev.getvalue())
    return (steps.getvalue(), reqs.getvalue(), stream, d), len(calls)


def head(tmp_path, n: int) -> str:
    """The first ``n`` requests of the conversation trace, as a file."""
    path = tmp_path / "head.jsonl"
    with gzip.open(CONVERSATION, "rt") as f:
        path.write_text("".join(line for _, line in zip(range(n), f)))
    return str(path)


def random_token_trace(path: Path, rng: random.Random, cfg: dict) -> str:
    """30 token-id requests under config ``cfg``: prompts sharing parts of one prefix, outputs
    of 1-89 tokens, arrival steps 0-59."""
    prefix = [rng.randrange(1, 999) for _ in range(40)]
    lines = [json.dumps({"config": cfg})]
    for i in range(30):
        p = prefix[:rng.randrange(0, 40)] + [rng.randrange(1, 999)
                                             for _ in range(rng.randrange(1, 50))]
        lines.append(json.dumps({"id": f"q{i}", "prompt_token_ids": p,
                                 "output_length": rng.randrange(1, 90),
                                 "arrival_step": rng.randrange(0, 60)}))
    path.write_text("\n".join(lines) + "\n")
    return str(path)
