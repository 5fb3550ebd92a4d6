"""Our event lines written on a second thread (`kvcore/engine/line_thread.py`, the native
`native_pipe.pyx`) are the same bytes `JsonlEvents` writes itself: record by record, and for
whole replays (sync, async, small pools with preemptions and evictions, a hybrid model, the CPU
tier, token-id traces), with chunks handed over every few records so that holds and heads cross
them; an interrupted replay ends its stream the same way; a failed write surfaces on the
replay's thread. Needs the compiled build (the formatter is native): skipped without it."""

from __future__ import annotations

import hashlib
import io
import json
import random

import pytest
from line_streams import interrupted, stream
from replay_bytes import SAMPLE, head, random_token_trace

from kvcore import compiled
from kvcore.engine.events import ALLOCATE, CACHE, EVICT, FREE, TOUCH, JsonlEvents
from kvcore.engine.replay import ReplayOptions, replay
from kvcore.kv_events import hash_to_int

pipe = compiled.native("kvcore.engine.native_pipe")
pytestmark = pytest.mark.skipif(pipe is None, reason="the line thread needs the compiled build")

H = [hashlib.sha256(bytes([i])).digest() for i in range(4)] + [b"\x01\x02", b""]


def test_records_become_the_lines_jsonl_events_writes():
    """Every block kind, a negative group, empty lists, short and empty hashes, a request
    change, `put` lines numbered by the formatter, a hold released with and without a first
    line; chunked at every record, then in one piece."""
    def drive(sink: JsonlEvents) -> None:
        sink.header({"x": 1})
        sink.step, sink.t_ms = 3, 1.25
        sink.lists_line(ALLOCATE, None, 0, [1, 2, 3])
        sink.lists_line(CACHE, "r1", 0, [1, 2], H[:2])
        sink.lists_line(TOUCH, "r1", -7, [], [])
        sink.hold()
        sink.lists_line(EVICT, "r2", 1, [4, 5, 6], H[2:5])
        sink.write("preempt", "r2", num_computed_tokens=5)
        sink.release(("admit", "r2", None, {"prompt_tokens": 9, "hashes": [1, 2]}))
        sink.step, sink.t_ms = 4, 1e-7
        sink.hold()
        sink.lists_line(FREE, "r2", 0, [9], [], [10, 11])
        sink.release()
        sink.lists_line(EVICT, "r2", 0, [7], [H[5]])
        sink.write("finish", "r2", output_tokens=3)
        sink.end({"requests": 1})

    plain = io.BytesIO()
    drive(JsonlEvents(plain))
    want = plain.getvalue()
    lines = [json.loads(x) for x in want.splitlines()]
    assert [x.get("seq") for x in lines] == [None, *range(10)]
    assert lines[4]["kind"] == "admit" and lines[5]["kind"] == "evict"
    assert lines[5]["hashes"] == [hash_to_int(h) for h in H[2:5]]
    for chunk in (1, 40, 1 << 20):
        out = io.BytesIO()
        drive(JsonlEvents(out, line_thread=True, chunk=chunk))
        assert out.getvalue() == want, chunk


def test_a_formatter_keeps_its_head_request_and_numbers_across_chunks():
    rec, fmt = pipe.Records(), pipe.Formatter()
    rec.head(b',"step":1,"t_ms":0.5')
    rec.req(b'"a"')
    rec.lists(ALLOCATE, 2, [5])
    first = fmt.format(rec.take())
    rec.raw(b'{"step":1,"kind":"x"}\n', True)
    rec.lists(FREE, 0, [1], [1], [])
    assert first == b'{"seq":0,"step":1,"t_ms":0.5,"kind":"allocate","req":"a","group":2,' \
                    b'"blocks":[5]}\n'
    assert fmt.format(rec.take()) == (
        b'{"seq":1,"step":1,"kind":"x"}\n'
        b'{"seq":2,"step":1,"t_ms":0.5,"kind":"free","req":"a","group":0,"blocks":[1],'
        b'"freed":[1],"evictable":[]}\n')
    assert fmt.seq == 3


def test_bad_records_are_refused_and_leave_the_buffer_whole():
    rec = pipe.Records()
    rec.lists(ALLOCATE, 0, [1])
    size = len(rec)
    with pytest.raises(TypeError, match="a block hash is bytes, not str"):
        rec.lists(CACHE, 0, [1], ["x"])
    with pytest.raises(TypeError):
        rec.lists(CACHE, 0, [1])                       # its hashes missing
    with pytest.raises(TypeError):
        rec.lists(ALLOCATE, 0, [1, "2"])
    with pytest.raises(ValueError):
        rec.lists(9, 0, [1])
    assert len(rec) == size
    rec.hold()
    with pytest.raises(RuntimeError):
        rec.take()                                     # never while lines are held
    rec.release()
    chunk = rec.take()
    with pytest.raises(ValueError, match="malformed"):
        pipe.Formatter().format(chunk[:-3])
    with pytest.raises(ValueError, match="malformed"):
        pipe.Formatter().format(b"\x07")
    assert pipe.Formatter().format(chunk).endswith(b'"blocks":[1]}\n')


@pytest.mark.parametrize("case", ["sample", "small-pool", "async-small-pool", "conversation",
                                  "hybrid", "cpu-tier", "tokens"])
def test_a_replay_writes_the_same_stream_with_the_line_thread(tmp_path, case):
    base = {"block_size": 16}
    trace, extra = {
        "sample": (str(SAMPLE), {"num_blocks": 4096, "async_scheduling": False}),
        "small-pool": (str(SAMPLE), {"num_blocks": 1200, "async_scheduling": False}),
        "async-small-pool": (str(SAMPLE), {"num_blocks": 1200}),
        "conversation": (head(tmp_path, 300), {"num_blocks": 20000}),
        "hybrid": (str(SAMPLE), {"num_blocks": 3000, "model": "gemma-3-27b"}),
        "cpu-tier": (str(SAMPLE), {"num_blocks": 1200, "kv_offloading_size": 1.0,
                                   "given": frozenset({"kv_offloading_size"})}),
        "tokens": (random_token_trace(tmp_path / "t.jsonl", random.Random(5), {}),
                   {"num_blocks": 64}),
    }[case]
    opts = ReplayOptions(**base, **extra)
    want = stream(trace, opts, threaded=False)
    assert stream(trace, opts, threaded=True) == want
    # small chunks: holds, heads and requests cross the hand-overs
    assert stream(trace, opts, threaded=True, chunk=5000) == want


def test_an_interrupted_replay_ends_the_stream_as_without_the_thread():
    """Ctrl-C midway: the same lines, held ones included, then `interrupted`."""
    plain, threaded = interrupted(False), interrupted(True)
    assert threaded == plain
    assert json.loads(threaded.splitlines()[-1])["kind"] == "interrupted"


def test_a_failed_write_surfaces_on_the_replay_thread_and_ends_the_thread():
    class Full(io.RawIOBase):
        def writable(self):
            return True

        def write(self, b):
            raise OSError(28, "No space left on device")

    sink = JsonlEvents(Full(), line_thread=True, chunk=100)
    with pytest.raises(OSError, match="No space left"):
        replay(str(SAMPLE), ReplayOptions(block_size=16, num_blocks=4096), sink)
    assert not sink._pipe.thread.is_alive()
