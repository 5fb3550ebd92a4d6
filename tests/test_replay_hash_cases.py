"""Hash-id (Mooncake-format) traces = vLLM 0.33.0's schedulers, step for step.

`data/sched_fresh/ebseed5928.hash.jsonl` (sync), `data/sched_fresh_async/baseed5663.hash.jsonl`
and `baseed7320.hash.jsonl` (async; 7320: 14 preemptions on a 31-block pool) are trace block ids
with a per-line `block_size` TB (`data/sched_fresh/make_hash_cases.py`).
The scheduler oracle reads token ids only: it answered their token forms (token p of a prompt is
`ids[p // TB] * TB + p % TB`; not committed, `token_form` rebuilds them). kvcli's replay of the
hash form must give the oracle's answer, and the same bytes as its replay of the token form, read
whole or
streamed (`read_trace(keep=...)`), and in the compiled build the prompt-hash thread
(`kvcore/engine/hash_ahead.py`), the path these cases were drawn to put under the oracle, must
give every prompt's block hashes but those it cannot: ebseed5928 (`--edges`) has trace block ids
whose tokens cross pickle's integer opcodes (256, 65536) and, in 4 of its 62 prompts, 2**31 (a
long int to pickle, so the replay's thread hashes those).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from oracle_sched import assert_matches, config_of, load_lines, replay_case

from kvcore import compiled
from kvcore.engine import hash_ahead
from kvcore.engine.replay import ReplayOptions, replay
from kvcore.engine.vllm_events import VllmEvents
from kvcore.traces import read_trace

DATA = Path(__file__).resolve().parent / "data"
CASES = [DATA / "sched_fresh" / "ebseed5928.hash.jsonl",
         DATA / "sched_fresh_async" / "baseed5663.hash.jsonl",
         DATA / "sched_fresh_async" / "baseed7320.hash.jsonl"]
# (requests, those whose tokens all stay below 2**31): the trace block sizes are multiples of
# the block size, so only tokens past 2**31 keep a prompt from the thread
REQUESTS = {"ebseed5928": (62, 58), "baseed5663": (21, 21), "baseed7320": (26, 26)}


def _name(trace: Path) -> str:
    return trace.name.split(".")[0]


def _asyn(trace: Path) -> bool:
    return config_of(trace).get("async_scheduling", False)


def token_form(trace: Path, out: Path) -> Path:
    """The case as the oracle read it: each prompt's tokens from its ids, in the same lines."""
    lines = trace.read_text().splitlines()
    rows = [json.loads(x) for x in lines[1:]]
    with open(out, "w") as f:
        f.write(lines[0] + "\n")
        for r in rows:
            ids, tb = r["hash_ids"], r["block_size"]
            tokens = [ids[p // tb] * tb + p % tb for p in range(r["input_length"])]
            f.write(json.dumps({"id": r["id"], "timestamp": r["timestamp"],
                                "prompt_token_ids": tokens, "output_length": r["output_length"],
                                "arrival_step": r["arrival_step"],
                                "priority": r["priority"]}) + "\n")
    return out


def _outputs(trace: Path, keep: int | None) -> tuple[bytes, bytes, bytes]:
    """The step, request and vLLM event lines of a replay reading the trace with ``keep``."""
    steps, reqs, events = io.BytesIO(), io.BytesIO(), io.BytesIO()
    replay(str(trace), ReplayOptions(arrivals="step", async_scheduling=_asyn(trace)),
           VllmEvents(events), steps_out=steps, requests_out=reqs,
           trace=read_trace(str(trace), keep=keep))
    return steps.getvalue(), reqs.getvalue(), events.getvalue()


@pytest.mark.parametrize("trace", CASES, ids=_name)
def test_hash_case(trace: Path):
    expected = load_lines(trace.with_name(trace.name.replace(".hash.", ".expected.")))
    run = replay_case(trace, async_scheduling=_asyn(trace))
    assert run[0].config["block_size"] == config_of(trace)["block_size"]
    assert len(run[2]) == REQUESTS[_name(trace)][0]
    assert_matches(expected, run, asyn=_asyn(trace),
                   kv_events=config_of(trace).get("kv_events", False))


@pytest.mark.parametrize("trace", CASES, ids=_name)
def test_the_token_form_writes_the_same_bytes(trace: Path, tmp_path: Path):
    # the answer was recorded on the token form: both forms are one case to kvcli too
    assert _outputs(token_form(trace, tmp_path / "t.jsonl"), None) == _outputs(trace, None)


@pytest.mark.parametrize("trace", CASES, ids=_name)
def test_streamed_reading_writes_the_same_bytes(trace: Path):
    # keep=1: more requests than that, so the trace is read twice and streamed in arrival order
    assert _outputs(trace, 1) == _outputs(trace, None)


@pytest.mark.parametrize("trace", CASES, ids=_name)
def test_prompt_hashes_come_from_the_thread(trace: Path, monkeypatch):
    """Compiled build: every request asks the thread for its prompt hashes, and each whose
    tokens stay below 2**31 gets them (the others are hashed on the replay's thread); pure
    build: there is no thread."""
    taken = []
    take = hash_ahead.Segments.take

    def counting(self, index):
        got = take(self, index)
        taken.append(got is not None)
        return got

    monkeypatch.setattr(hash_ahead.Segments, "take", counting)
    replay_case(trace, async_scheduling=_asyn(trace))
    if compiled.active():
        assert (len(taken), sum(taken)) == REQUESTS[_name(trace)]
    else:
        assert taken == []
