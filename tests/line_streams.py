"""One replay's event stream with and without the line thread, into an in-process buffer or a
kvcli file (`open_output`: the native pump writes it), for `test_line_thread.py` and
`test_line_pump.py`."""

from __future__ import annotations

import io
import json
from pathlib import Path

from replay_bytes import SAMPLE

from kvcli.output_files import open_output
from kvcore.engine.events import JsonlEvents
from kvcore.engine.line_thread import PumpLines
from kvcore.engine.replay import ReplayOptions, replay


def _run(path: Path | None, threaded: bool, chunk: int, run) -> bytes:
    """``run(sink)`` with a `JsonlEvents` into a buffer (``path`` None) or the file ``path``;
    the bytes written."""
    if path is None:
        out = io.BytesIO()
        run(JsonlEvents(out, line_thread=threaded, chunk=chunk))
        return out.getvalue()
    with open_output(str(path), keep_on_interrupt=True) as f:
        sink = JsonlEvents(f, line_thread=threaded, chunk=chunk)
        assert isinstance(sink._pipe, PumpLines) == threaded
        run(sink)
    return path.read_bytes()


def stream(trace: str, opts: ReplayOptions, *, threaded: bool, chunk: int = 1 << 20,
           path: Path | None = None) -> tuple[bytes, dict]:
    """The stream less its last line, and that line and the summary less their wall times."""
    got: list = []
    data = _run(path, threaded, chunk, lambda sink: got.append(replay(trace, opts, sink)))
    d = got[0].to_dict()
    d.pop("wall_time_s")
    lines = data.splitlines()
    end = json.loads(lines[-1])
    end["summary"].pop("wall_time_s")
    return b"\n".join(lines[:-1]), {**end, "summary_": d}


def interrupted(threaded: bool, path: Path | None = None) -> bytes:
    """The sample replayed until Ctrl-C after the 40th request finishes (the progress callback
    raises it): the stream, ending with its `interrupted` line."""
    done = [0]

    def progress(n: int = 1) -> None:
        done[0] += n
        if done[0] == 40:
            raise KeyboardInterrupt

    def run(sink: JsonlEvents) -> None:
        s = replay(str(SAMPLE), ReplayOptions(block_size=16, num_blocks=1200,
                                              async_scheduling=False), sink, progress=progress)
        assert s.interrupted

    return _run(path, threaded, 3000, run)
