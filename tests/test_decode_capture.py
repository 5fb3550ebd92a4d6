"""The decode batches `kvcli bench --gpu --trace` times (`kvcore.engine.decode_capture`), checked
against what the same replay's outputs say each request held at that step: its length from the
step lines (the hit at its last admission plus every token scheduled since, this step's included)
and its blocks from the event stream (touches and allocations in order, frees removing them).
The event stream has no null entries (a sliding window's dropped blocks), so a captured table is
checked as nulls then exactly the blocks the events left, covering every position of the length.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from kvcore.engine.decode_capture import capture_decode_steps, sample_positions
from kvcore.engine.events import CallbackEvents
from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay

ROOT = Path(__file__).resolve().parents[1]
HYBRID = ROOT / "tests" / "data" / "sched_fresh_hybrid"


def _expected(trace: str, opts: ReplayOptions) -> tuple[dict, dict, list[int]]:
    """Per step, the decoding requests with (length, tables per group) as the outputs tell it."""
    events: list[dict] = []
    steps_out = io.BytesIO()
    replay(trace, opts, CallbackEvents(events.append), steps_out=steps_out)
    lines = [json.loads(x) for x in steps_out.getvalue().splitlines()]
    prompt = {e["req"]: e["prompt_tokens"] for e in events if e["kind"] == "arrive"}
    groups = len(next(e for e in events if e["kind"] == "header")["groups"])
    by_step: dict[int, list[dict]] = {}
    for e in events:
        by_step.setdefault(e.get("step"), []).append(e)
    held: dict[tuple[str, int], list[int]] = {}
    length: dict[str, int] = {}
    expected, decode_steps = {}, []

    def apply(table: dict, e: dict) -> None:
        key = (e["req"], e["group"])
        if e["kind"] in ("touch", "allocate"):
            table.setdefault(key, []).extend(e["blocks"])
        elif e["kind"] == "free":
            gone = set(e["blocks"])
            table[key] = [b for b in table.get(key, []) if b not in gone]

    for line in lines:
        s = line["step"]
        for rid, hit in line["admitted"].items():
            length[rid] = hit
        for rid, n in line["scheduled"].items():
            length[rid] += n
        decodes = [rid for rid, n in line["scheduled"].items()
                   if n == 1 and length[rid] > prompt[rid]]
        evs = [e for e in by_step.get(s, [])
               if e["kind"] in ("touch", "allocate", "free", "finish")]
        snap = {}
        for rid in decodes:
            # the request's own events of this step, up to its finish (a finished request's
            # blocks are freed after its last batch ran)
            mine = {(rid, g): list(held.get((rid, g), [])) for g in range(groups)}
            for e in evs:
                if e["req"] != rid:
                    continue
                if e["kind"] == "finish":
                    break
                apply(mine, e)
            snap[rid] = (length[rid], [mine[(rid, g)] for g in range(groups)])
        for e in evs:
            apply(held, e)
        if decodes:
            decode_steps.append(s)
            expected[s] = (decodes, snap)
    header = next(e for e in events if e["kind"] == "header")
    return expected, header, decode_steps


CASES = [
    (str(HYBRID / "hseed209.trace.jsonl"), {"arrivals": "step", "async_scheduling": False}),
    (str(HYBRID / "haseed214.trace.jsonl"), {"arrivals": "step"}),
    (str(HYBRID / "haseed227.trace.jsonl"), {"arrivals": "step"}),        # sliding only
    (str(HYBRID / "hseed204.trace.jsonl"), {"arrivals": "step"}),         # chunked local
    (str(ROOT / "tests" / "data" / "sched_cases_hybrid" / "d_hybrid_preemption.trace.jsonl"),
     {"arrivals": "step", "async_scheduling": False}),
    (str(ROOT / "traces" / "multiturn-chat.jsonl"), {"num_blocks": 600}),          # preemptions
    (str(ROOT / "traces" / "multiturn-chat.jsonl"),
     {"num_blocks": 700, "async_scheduling": False}),
]


@pytest.mark.parametrize("trace,opts", CASES, ids=[
    "hybrid-sync", "hybrid-async", "sliding-only-async", "chunked-local", "hybrid-preemption",
    "chat-async", "chat-sync"])
def test_captured_steps_are_what_the_replay_held(trace: str, opts: dict) -> None:
    options = ReplayOptions(**opts)
    expected, header, decode_steps = _expected(trace, options)
    sample = 40 if "multiturn" in trace else 10_000
    cap = capture_decode_steps(trace, options, sample)
    assert cap.decode_steps == len(decode_steps)
    want = [decode_steps[p] for p in sample_positions(len(decode_steps), sample)]
    assert [s.step for s in cap.steps] == want
    assert [g.kind for g in cap.groups] == [g["type"] for g in header["groups"]]
    assert [g.sliding_window for g in cap.groups] == [g["sliding_window"] for g in header["groups"]]
    nulls = 0
    for s in cap.steps:
        rids, snap = expected[s.step]
        assert s.request_ids == rids, s.step
        for i, rid in enumerate(rids):
            n, tables = snap[rid]
            assert s.seq_lens[i] == n, (s.step, rid)
            for g, info in enumerate(cap.groups):
                row = s.block_tables[g][i]
                assert len(row) == -(-n // info.block_size), (s.step, rid, g)
                pad = len(row) - len(tables[g])
                assert row == [0] * pad + tables[g], (s.step, rid, g)
                if info.sliding_window:
                    first = max(0, n - info.sliding_window) // info.block_size
                    assert 0 not in row[first:]      # the window's blocks are all held
                    nulls += pad
                elif info.kind == "full_attention":
                    assert pad == 0
    if any(g.sliding_window for g in cap.groups):
        assert nulls > 0                              # the windows did drop blocks


def test_sample_positions_spread_evenly() -> None:
    assert sample_positions(10, 3) == [1, 5, 8]
    assert sample_positions(4, 4) == sample_positions(4, 9) == [0, 1, 2, 3]
    assert sample_positions(0, 5) == []
    assert sample_positions(1000, 1) == [500]


def test_a_bad_sample_count_names_the_option() -> None:
    from kvcore.errors import InputError

    with pytest.raises(InputError) as err:
        capture_decode_steps(str(HYBRID / "hseed209.trace.jsonl"), ReplayOptions(), 0)
    assert err.value.field == "sample_steps"
