"""Threads a run starts for what a user asks: `kvcli cluster --replicas 1000 --events DIR` opened
2,000 event files, each with its own writer thread, and failed at the 280th under a 6 GB
address-space limit ('can't start new thread': a traceback, exit 1, a temporary file left in
the folder). The writer threads are now capped (`output_thread.MAX_THREADS`); the files past
the cap, or past a thread that cannot start, are written on the run's own thread."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

from typer.testing import CliRunner

from kvcli import output_thread
from kvcli.app import app
from kvcli.output_files import open_output

ROOT = Path(__file__).resolve().parents[1]
SHARED = str(ROOT / "traces" / "shared-prefix.jsonl")
runner = CliRunner()


def test_outputs_open_at_once_share_a_bounded_number_of_writer_threads(tmp_path):
    before = threading.active_count()
    paths = [tmp_path / f"f{i}.txt" for i in range(output_thread.MAX_THREADS + 24)]
    with contextlib.ExitStack() as stack:
        files = [stack.enter_context(open_output(str(p), field="events")) for p in paths]
        assert threading.active_count() - before == output_thread.MAX_THREADS
        for i, f in enumerate(files):
            f.write(b"line %d\n" % i * 5000)          # (past the small buffer's size)
    assert threading.active_count() == before
    assert [p.read_bytes() for p in paths] == [b"line %d\n" % i * 5000 for i in range(len(paths))]
    assert sorted(q.name for q in tmp_path.iterdir()) == sorted(p.name for p in paths)
    # a writer thread is free again once its file is closed
    assert output_thread.thread_free()


def test_a_thread_that_cannot_start_leaves_its_file_to_the_run(tmp_path, monkeypatch):
    started = [0]
    start = threading.Thread.start

    def limited(self):
        if self.name.startswith("write "):
            started[0] += 1
            if started[0] > 3:
                raise RuntimeError("can't start new thread")
        start(self)

    monkeypatch.setattr(threading.Thread, "start", limited)
    out = tmp_path / "ev"
    r = runner.invoke(app, ["cluster", SHARED, "--replicas", "4", "--num-blocks", "128",
                            "--events", str(out), "--json"])
    assert r.exit_code == 0, r.output
    files = sorted(p.name for p in (out / "round_robin").iterdir())
    assert files == sorted(f"replica-{k}.{kind}.jsonl" for k in range(4)
                           for kind in ("events", "vllm"))
    # every stream complete: our stream ends with its `end` line, vLLM's has a batch a line
    for k in range(4):
        lines = (out / "round_robin" / f"replica-{k}.events.jsonl").read_text().splitlines()
        assert '"kind":"end"' in lines[-1]
        assert (out / "round_robin" / f"replica-{k}.vllm.jsonl").read_text().endswith("\n")
