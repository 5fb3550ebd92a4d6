"""A trace read as a stream (`read_trace(keep=K)`, `kvcore.traces.stream`) is the trace read
whole, request for request, and a replay over it writes the same bytes; the replay holds only
the records of requests in flight (`kvcore.engine.request_book`)."""

from __future__ import annotations

import io
import json
import os
import random
import re
from pathlib import Path

import pytest
from replay_bytes import SAMPLE, head

import kvcore.traces.stream as stream_module
from kvcore.engine.events import JsonlEvents
from kvcore.engine.replay import ReplayOptions, replay
from kvcore.engine.request_book import RequestBook
from kvcore.engine.vllm_events import VllmEvents
from kvcore.errors import InputError
from kvcore.traces import read_trace
from kvcore.traces.stream import TraceStream


def token_trace(path, rng: random.Random, n: int = 60, *, shuffled: bool = True,
                lora: bool = False) -> str:
    """Token-id requests sharing prefixes; timestamps and arrival steps out of file order
    (``shuffled``), some LoRA adapters first seen out of arrival order (``lora``)."""
    prefix = [rng.randrange(1, 999) for _ in range(64)]
    lines = []
    for i in range(n):
        t = rng.randrange(0, 4000) if shuffled else 25 * i
        obj = {"id": f"q{i}", "timestamp": t,
               "prompt_token_ids": prefix[:rng.randrange(0, 64)]
               + [rng.randrange(1, 999) for _ in range(rng.randrange(1, 40))],
               "output_length": rng.randrange(1, 60),
               "arrival_step": rng.randrange(0, 80) if shuffled else i}
        if lora and i % 3:
            obj["lora"] = f"adapter-{(n - i) % 4}"
        lines.append(json.dumps(obj))
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def outputs(path: str, opts: ReplayOptions, keep: int | None, events: str = "jsonl"):
    """Every output of a replay of `path` read with `keep`: step lines, request lines, the
    event stream and the summary (wall times left out)."""
    steps, reqs, ev = io.BytesIO(), io.BytesIO(), io.BytesIO()
    sink = JsonlEvents(ev) if events == "jsonl" else VllmEvents(ev)
    trace = read_trace(path, keep=keep)
    assert isinstance(trace.requests, TraceStream) == (keep is not None)
    s = replay(path, opts, sink, steps_out=steps, requests_out=reqs, trace=trace).to_dict()
    s.pop("wall_time_s")
    ev_bytes = re.sub(rb'"wall_time_s":[0-9.e+-]+', b'"wall_time_s":0', ev.getvalue())
    return steps.getvalue(), reqs.getvalue(), ev_bytes, s


def test_a_stream_is_the_trace_read_whole(tmp_path):
    paths = [str(SAMPLE), head(tmp_path, 700),
             token_trace(tmp_path / "t.jsonl", random.Random(3), lora=True)]
    for path in paths:
        whole, streamed = read_trace(path), read_trace(path, keep=5)
        assert isinstance(whole.requests, list) and isinstance(streamed.requests, TraceStream)
        assert len(streamed.requests) == len(whole.requests)
        assert list(streamed.requests) == whole.requests        # twice: it reads again
        assert list(streamed.requests) == whole.requests
        by_step = sorted(whole.requests, key=lambda r: (r.arrival_step, r.index))
        assert list(streamed.requests.by_step()) == by_step
        for key in ("format", "config", "config_line", "out_of_order", "prompt_tokens",
                    "first_arrival_ms", "last_arrival_ms", "max_total_tokens", "lora_names"):
            assert getattr(streamed, key) == getattr(whole, key), key
    shuffled = read_trace(paths[2])
    # (file order of first appearance: lines 2, 3, 5 and 6)
    assert shuffled.out_of_order > 10 and shuffled.lora_names == [
        "adapter-3", "adapter-2", "adapter-0", "adapter-1"]
    assert shuffled.prompt_tokens == sum(r.prompt_len for r in shuffled.requests)


def test_a_small_trace_or_stdin_is_held_whole(tmp_path, monkeypatch):
    path = token_trace(tmp_path / "t.jsonl", random.Random(1), n=10)
    assert isinstance(read_trace(path, keep=10).requests, list)     # not more than keep
    assert isinstance(read_trace(path, keep=9).requests, TraceStream)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(Path(path).read_bytes())))
    assert isinstance(read_trace("-", keep=1).requests, list)       # cannot be read again


OPTS = {
    "sync": ReplayOptions(num_blocks=64, block_size=16, async_scheduling=False),
    "async": ReplayOptions(num_blocks=64, block_size=16, async_scheduling=True),
    "step": ReplayOptions(num_blocks=48, block_size=16, arrivals="step"),
    "ignore": ReplayOptions(num_blocks=200, block_size=16, arrivals="ignore", warmup=0.25),
    "cache": ReplayOptions(num_blocks=40, block_size=16, mode="cache", warmup=0.1),
    "max_steps": ReplayOptions(num_blocks=64, block_size=16, max_steps=40),
    "offload": ReplayOptions(num_blocks=40, block_size=16, arrivals="step",
                             kv_offloading_size_chunks=64, async_scheduling=False),
}


@pytest.mark.parametrize("name", sorted(OPTS))
def test_a_streamed_replay_writes_the_same_bytes(tmp_path, name):
    path = token_trace(tmp_path / "t.jsonl", random.Random(name), lora=True)
    whole = outputs(path, OPTS[name], None)
    assert whole[1].count(b"\n") > 0 and whole[2].count(b"\n") > 30
    for keep in (1, 7):
        assert outputs(path, OPTS[name], keep) == whole
    if name in ("sync", "step"):
        assert outputs(path, OPTS[name], 1, "vllm") == outputs(path, OPTS[name], None, "vllm")


def test_the_conversation_head_streamed_writes_the_same_bytes(tmp_path):
    path = head(tmp_path, 600)
    opts = ReplayOptions(num_blocks=6000, block_size=16, skip_bad=True)
    assert outputs(path, opts, 100) == outputs(path, opts, None)


def test_max_steps_writes_a_line_for_each_request_that_never_arrived(tmp_path):
    path = token_trace(tmp_path / "t.jsonl", random.Random(5), shuffled=False)
    lines = [json.loads(x) for x in outputs(path, OPTS["max_steps"], 3)[1].splitlines()]
    assert [x["id"] for x in lines] == [f"q{i}" for i in range(60)]     # arrival order
    # the last ones never arrived (their timestamps are past the 40th step): default lines
    assert lines[-1]["arrival"] == 0.0 and lines[-1]["first_scheduled_step"] is None
    assert lines[0]["finish_step"] is not None


def test_the_replay_holds_only_the_requests_in_flight(tmp_path, monkeypatch):
    """400 requests 25 ms apart: a few records open at once, none at the end, and the request
    lines written as the requests finish, not at the end."""
    most = []
    real_open = RequestBook.open

    def counting(self, tr, pos=None):
        most.append(len(self.live))
        return real_open(self, tr, pos)

    monkeypatch.setattr(RequestBook, "open", counting)
    path = token_trace(tmp_path / "t.jsonl", random.Random(6), n=400, shuffled=False)
    reqs = io.BytesIO()
    written = []
    real_retire = RequestBook.retire

    def retire(self, rid):
        real_retire(self, rid)
        written.append(reqs.tell())

    monkeypatch.setattr(RequestBook, "retire", retire)
    trace = read_trace(path, keep=10)
    s = replay(path, ReplayOptions(num_blocks=256, block_size=16), requests_out=reqs,
               trace=trace)
    assert s.finished == 400 and len(most) == 400 and 0 < max(most) < 20
    assert written[200] > 0 and reqs.getvalue().count(b"\n") == 400


def test_a_trace_changed_between_readings_is_an_error(tmp_path):
    path = token_trace(tmp_path / "t.jsonl", random.Random(2), n=20)
    trace = read_trace(path, keep=2)
    with open(path, "a") as f:
        f.write(json.dumps({"id": "late", "prompt_token_ids": [1, 2], "output_length": 2}) + "\n")
    with pytest.raises(InputError, match="changed while it was replayed"):
        list(trace.requests)
    with pytest.raises(InputError, match="changed while it was replayed"):
        replay(path, OPTS["sync"], trace=trace)


def test_a_duplicate_id_past_keep_names_its_line(tmp_path, monkeypatch):
    path = token_trace(tmp_path / "t.jsonl", random.Random(4), n=30)
    lines = Path(path).read_text().splitlines()
    lines[25] = lines[25].replace('"q25"', '"q3"')
    Path(path).write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        read_trace(path, keep=5)
    assert str(err.value) == (f"{path}:26: field 'id': duplicate request id 'q3' (a line "
                              "without an id is named by its place in the trace, which may be "
                              "another line's id)")
    # ids whose hashes merely collide are not duplicates
    monkeypatch.setattr(stream_module.xxhash, "xxh3_64_intdigest", lambda s: 7)
    fine = token_trace(tmp_path / "u.jsonl", random.Random(4), n=30)
    assert len(read_trace(fine, keep=5).requests) == 30
    os.remove(fine)


def test_kvcli_replay_streams_a_trace_past_held_requests(tmp_path, monkeypatch):
    """The command reads a trace of more than `HELD_REQUESTS` as a stream: same files."""
    from typer.testing import CliRunner

    import kvcli.commands.replay as replay_command
    import kvcore.traces.reader as reader_module
    from kvcli.app import app

    path = token_trace(tmp_path / "t.jsonl", random.Random(8), lora=True)
    streamed = []

    def files(held: int) -> list[bytes]:
        monkeypatch.setattr(replay_command, "HELD_REQUESTS", held)
        out = [tmp_path / f"{name}-{held}.jsonl" for name in ("events", "requests", "steps")]
        res = CliRunner().invoke(app, ["replay", path, "--block-size", "16", "--num-blocks",
                                       "64", "--events", str(out[0]), "--requests",
                                       str(out[1]), "--steps", str(out[2])])
        assert res.exit_code == 0, res.output
        return [re.sub(rb'"wall_time_s":[0-9.e+-]+', b"", p.read_bytes()) for p in out]

    monkeypatch.setattr(reader_module, "TraceStream",
                        lambda *a: streamed.append(1) or TraceStream(*a))
    assert files(5) == files(1000) and streamed == [1]      # (60 requests: 5 < 60 < 1000)
