"""A trace read twice (`read_trace(keep=K)`, `kvcore.traces.stream`) that changes under kvcli:
every change is one line naming the change, exit code 2, no output left behind. It was a
FileNotFoundError traceback (the trace removed before the second reading), a plain bad line
(`t.jsonl:1501: field 'output_length': missing`, a line the first reading had passed), or
nothing at all (a file replaced while the first reading ran: the second read another file)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kvcli.commands.replay as replay_command
import kvcore.engine.replay as replay_module
import kvcore.traces.reader as reader_module
from kvcli.app import app
from kvcore.errors import InputError
from kvcore.traces import read_trace

CHANGED = ("the trace changed while it was replayed (it is read twice: once to check it, then "
           "request by request)")


def _trace(path: Path, n: int = 2000) -> Path:
    """Past the reader's 64 KiB buffer (about 150 bytes a line), so a change reaches it."""
    path.write_text("".join(json.dumps({"id": f"q{i}", "timestamp": 25 * i,
                                        "prompt_token_ids": [i % 97 + 1] * 20,
                                        "output_length": 2}) + "\n" for i in range(n)))
    return path


def _replay(path: Path, out: Path, monkeypatch) -> object:
    monkeypatch.setattr(replay_command, "HELD_REQUESTS", 5)
    return CliRunner().invoke(app, ["replay", str(path), "--mode", "cache", "--events",
                                    str(out), "--json"])


def test_a_line_changed_during_the_second_reading(tmp_path, monkeypatch):
    path, out = _trace(tmp_path / "t.jsonl"), tmp_path / "ev.jsonl"
    real = reader_module.file_requests

    def rewritten(p, trace=None):
        for i, req in enumerate(real(p, trace)):
            if i == 10:     # line 1,501 loses its output_length, in place
                lines = path.read_text().splitlines()
                lines[1500] = lines[1500].replace('"output_length"', '"output_lengthX"')
                path.write_text("\n".join(lines) + "\n")
            yield req

    monkeypatch.setattr(reader_module, "file_requests", rewritten)
    res = _replay(path, out, monkeypatch)
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr == f"error: {path}:1501: {CHANGED}: field 'output_length': missing\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]


def test_the_trace_removed_before_the_second_reading(tmp_path, monkeypatch):
    path, out = _trace(tmp_path / "t.jsonl", 40), tmp_path / "ev.jsonl"
    real = replay_module._replay

    def removed(trace_path, *a, **k):
        os.remove(trace_path)
        return real(trace_path, *a, **k)

    monkeypatch.setattr(replay_module, "_replay", removed)
    res = _replay(path, out, monkeypatch)
    assert res.exit_code == 2, res.output
    assert res.stderr == f"error: {path}: {CHANGED}\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("how", ["replaced", "appended"])
def test_a_file_changed_during_the_first_reading(tmp_path, monkeypatch, how):
    """`sed -i` (a new file under the name) or an append while the first reading runs: that
    reading read the old file, and the second would read the new one unchecked."""
    path = _trace(tmp_path / "t.jsonl", 40)
    real = reader_module._file_requests

    def changing(name, stream, trace):
        for i, req in enumerate(real(name, stream, trace)):
            if i == 3:
                if how == "replaced":
                    new = _trace(tmp_path / "new.jsonl", 40)
                    os.replace(new, path)
                else:
                    with open(path, "a") as f:
                        f.write(json.dumps({"id": "late", "timestamp": 1000,
                                            "prompt_token_ids": [1],
                                            "output_length": 1}) + "\n")
            yield req

    monkeypatch.setattr(reader_module, "_file_requests", changing)
    with pytest.raises(InputError) as err:
        read_trace(str(path), keep=5)
    assert str(err.value) == (f"{path}: the trace changed while it was read (a trace of more "
                              "than 5 requests is read twice: it must stay as it is)")
