"""The event lines' native pump (`PumpLines`, `native_pipe.Pump`): where the output is kvcli's
regular file, the line thread writes its descriptor itself, without the interpreter's lock. The
file holds the same bytes as without any thread (whole replays, chunks handed over every few
records, an interrupted replay); chunks are written in order and at most `depth` wait; a write
that fails (a full device) surfaces on the replay's thread as the file's `OutputFailed`, the
thread ends, and nothing more is written. Needs the compiled build: skipped without it."""

from __future__ import annotations

import io
import json
import os
import threading

import pytest
from line_streams import interrupted, stream
from replay_bytes import SAMPLE, head

from kvcli.output_files import OutputFailed, open_output
from kvcore import compiled
from kvcore.engine.events import ALLOCATE, JsonlEvents
from kvcore.engine.line_thread import LineThread, PumpLines, line_thread
from kvcore.engine.replay import ReplayOptions, replay

pipe = compiled.native("kvcore.engine.native_pipe")
pytestmark = pytest.mark.skipif(pipe is None, reason="the pump needs the compiled build")


def _lines(n: int, start: int = 0) -> bytes:
    rec = pipe.Records()
    rec.head(b',"step":1,"t_ms":0.5')
    for i in range(start, start + n):
        rec.lists(ALLOCATE, 0, [i])
    return rec.take()


def _text(n: int) -> bytes:
    return b"".join(b'{"seq":%d,"step":1,"t_ms":0.5,"kind":"allocate","req":null,"group":0,'
                    b'"blocks":[%d]}\n' % (i, i) for i in range(n))


def test_a_pump_writes_its_chunks_in_order_and_waits_at_its_depth(tmp_path):
    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    pump = pipe.Pump(pipe.Formatter(), fd, 2)
    puts = []

    def producer() -> None:
        for k in range(50):
            puts.append(pump.put(_lines(10, 10 * k)))
        pump.close()

    t = threading.Thread(target=producer)
    t.start()
    pump.run()          # on this thread: returns once closed and every chunk is written
    t.join()
    os.close(fd)
    assert puts == [True] * 50 and pump.failure() == (0, 0)
    assert path.read_bytes() == _text(500)
    with pytest.raises(ValueError):
        pipe.Pump(pipe.Formatter(), fd, 0)


def test_chunks_below_the_wake_mark_are_written_at_the_close(tmp_path):
    """A waiting pump is woken once half its depth is queued; fewer wait for `close`."""
    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    pump = pipe.Pump(pipe.Formatter(), fd, 8)
    t = threading.Thread(target=pump.run)
    t.start()
    assert all(pump.put(_lines(10, 10 * k)) for k in range(3))
    pump.close()
    t.join()
    os.close(fd)
    assert path.read_bytes() == _text(30)


def test_a_dropping_close_writes_nothing_more(tmp_path):
    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    pump = pipe.Pump(pipe.Formatter(), fd, 4)
    assert pump.put(_lines(3)) and pump.put(_lines(3, 3))
    pump.close(True)
    pump.run()
    os.close(fd)
    assert path.read_bytes() == b"" and not pump.put(_lines(1))


def test_a_full_device_fails_the_pump_and_then_every_put():
    fd = os.open("/dev/full", os.O_WRONLY)
    pump = pipe.Pump(pipe.Formatter(), fd, 1)
    t = threading.Thread(target=pump.run)
    t.start()
    results = [pump.put(_lines(5)) for _ in range(4)]   # the 3rd waits for the 1st's failure
    pump.close()
    t.join()
    os.close(fd)
    assert results[0] and not results[-1]
    assert pump.failure()[0] == 28


def test_only_kvcli_files_get_the_pump(tmp_path):
    with open_output(str(tmp_path / "e.jsonl")) as f:
        assert isinstance(line_thread(f, pipe), PumpLines)
    for out in (io.BytesIO(), open_output(str(tmp_path / "e.jsonl.gz")).__enter__()):
        assert isinstance(line_thread(out, pipe), LineThread)


@pytest.mark.parametrize("case", ["sample", "async-small-pool", "conversation"])
def test_a_replay_writes_the_same_file_with_the_pump(tmp_path, case):
    trace, extra = {
        "sample": (str(SAMPLE), {"num_blocks": 4096, "async_scheduling": False}),
        "async-small-pool": (str(SAMPLE), {"num_blocks": 1200}),
        "conversation": (head(tmp_path, 300), {"num_blocks": 20000}),
    }[case]
    opts = ReplayOptions(block_size=16, **extra)
    want = stream(trace, opts, threaded=False, path=tmp_path / "plain.jsonl")
    assert stream(trace, opts, threaded=True, path=tmp_path / "pump.jsonl") == want
    assert stream(trace, opts, threaded=True, chunk=5000, path=tmp_path / "small.jsonl") == want


def test_an_interrupted_replay_ends_the_file_as_without_the_pump(tmp_path):
    plain = interrupted(False, tmp_path / "plain.jsonl")
    pumped = interrupted(True, tmp_path / "pump.jsonl")
    assert pumped == plain
    assert json.loads(pumped.splitlines()[-1])["kind"] == "interrupted"


def test_a_failed_write_surfaces_as_the_files_output_failed(tmp_path):
    """The pump writes /dev/full (its raw file lends that descriptor): the replay's thread
    raises the file's `OutputFailed`, the pump's thread has ended."""
    class FullRaw(io.RawIOBase):
        label = "full.jsonl"

        def __init__(self) -> None:
            super().__init__()
            self.fd = os.open("/dev/full", os.O_WRONLY)
            self.error: OSError | None = None

        def writable(self) -> bool:
            return True

        def write(self, b) -> int:  # type: ignore[override]
            return len(b)           # the header: accepted

        def lend_fd(self) -> int:
            return self.fd

        def failed(self, err: OSError) -> OutputFailed:
            self.error = err
            return OutputFailed(self.label, err)

    raw = FullRaw()
    sink = JsonlEvents(io.BufferedWriter(raw), line_thread=True, chunk=100)
    assert isinstance(sink._pipe, PumpLines)
    with pytest.raises(OutputFailed, match="cannot write full.jsonl: No space left"):
        replay(str(SAMPLE), ReplayOptions(block_size=16, num_blocks=4096), sink)
    assert raw.error is not None and raw.error.errno == 28
    assert sink._pipe.thread is not None and not sink._pipe.thread.is_alive()
    os.close(raw.fd)
