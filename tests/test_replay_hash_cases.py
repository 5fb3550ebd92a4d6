"""Hash-id (Mooncake-format) traces = vLLM 0.33.0's schedulers, step for step.

`data/sched_fresh/bseedN.hash.jsonl` (sync) and `data/sched_fresh_async/baseedN.hash.jsonl`
(async) are the token-id cases beside them (`*.trace.jsonl`, answered by the scheduler oracle,
which reads token ids only) written as trace block ids with a per-line `block_size`
(`data/sched_fresh/make_hash_cases.py`; token p of a prompt is `ids[p // TB] * TB + p % TB`).
kvcli's replay of the hash form must give the oracle's answer to the token form, read whole or
streamed (`read_trace(keep=...)`), and in the compiled build every prompt's block hashes must
come from the prompt-hash thread (`kvcore/engine/hash_ahead.py`), the path these cases were
drawn to put under the oracle.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from oracle_sched import assert_matches, config_of, load_lines, replay_case

from kvcore import compiled
from kvcore.engine import hash_ahead
from kvcore.engine.replay import ReplayOptions, replay
from kvcore.engine.vllm_events import VllmEvents
from kvcore.traces import read_trace

DATA = Path(__file__).resolve().parent / "data"
CASES = [DATA / "sched_fresh" / "bseed5659.hash.jsonl",
         DATA / "sched_fresh_async" / "baseed5663.hash.jsonl"]
# requests in each case; all have a trace block size that is a multiple of the block size
REQUESTS = {"bseed5659": 30, "baseed5663": 21}


def _name(trace: Path) -> str:
    return trace.name.split(".")[0]


def _asyn(trace: Path) -> bool:
    return config_of(trace).get("async_scheduling", False)


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
    assert len(run[2]) == REQUESTS[_name(trace)]
    assert_matches(expected, run, asyn=_asyn(trace),
                   kv_events=config_of(trace).get("kv_events", False))


@pytest.mark.parametrize("trace", CASES, ids=_name)
def test_streamed_reading_writes_the_same_bytes(trace: Path):
    # keep=1: more requests than that, so the trace is read twice and streamed in arrival order
    assert _outputs(trace, 1) == _outputs(trace, None)


@pytest.mark.parametrize("trace", CASES, ids=_name)
def test_prompt_hashes_come_from_the_thread(trace: Path, monkeypatch):
    """Compiled build: every request's prompt hashes are taken from the thread's jobs (none
    hashed on the replay's thread); pure build: there is no thread."""
    taken = []
    take = hash_ahead.Segments.take

    def counting(self, index):
        got = take(self, index)
        taken.append(got is not None)
        return got

    monkeypatch.setattr(hash_ahead.Segments, "take", counting)
    replay_case(trace, async_scheduling=_asyn(trace))
    n = REQUESTS[_name(trace)]
    if compiled.active():
        assert (len(taken), sum(taken)) == (n, n)
    else:
        assert taken == []
