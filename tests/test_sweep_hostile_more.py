"""`kvcli sweep` on a hostile host: a temporary folder that is full or unusable (the workers'
traces file), two sweeps on one results file at once, a resume with nothing left to run."""

from __future__ import annotations

import errno
import json
import tempfile
import types
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.sweep import executor_local

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
CHAT = str(ROOT / "traces" / "multiturn-chat.jsonl")


def _grid(res: Path, blocks: str = "600,700") -> list[str]:
    return ["sweep", "--trace", CHAT, "--set", f"num_blocks={blocks}", "--results", str(res),
            "--jobs", "1"]


def _one_error_line(r) -> str:
    assert "Traceback" not in r.output, r.output
    errors = [x for x in r.stderr.splitlines() if x.startswith("error:")]
    assert len(errors) == 1, r.stderr
    return errors[0]


def _full_disk(tmp: Path, monkeypatch) -> None:
    """The traces file's write fails part-way with ENOSPC (a full temp folder)."""
    def dump(obj, f, protocol=None):
        f.write(b"x" * 1000)
        f.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setattr(executor_local, "pickle", types.SimpleNamespace(dump=dump))


def test_a_full_temp_folder_is_one_line_and_leaves_no_file(tmp_path, monkeypatch):
    """It was an OSError traceback from pickle.dump (exit 1) that left the partial
    kvcli-sweep-*.traces and an empty results file."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    _full_disk(tmp, monkeypatch)
    res = tmp_path / "r.jsonl"
    r = runner.invoke(app, _grid(res))
    assert r.exit_code == 2, r.output
    line = _one_error_line(r)
    assert str(tmp) in line and "No space left on device" in line, line
    assert list(tmp.iterdir()) == []
    assert not res.exists()


def test_a_full_temp_folder_keeps_a_resumed_results_file_as_it_was(tmp_path, monkeypatch):
    res = tmp_path / "r.jsonl"
    assert runner.invoke(app, _grid(res, "600")).exit_code == 0
    before = res.read_bytes()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    _full_disk(tmp, monkeypatch)
    r = runner.invoke(app, [*_grid(res), "--resume"])
    assert r.exit_code == 2 and "No space left on device" in _one_error_line(r)
    assert res.read_bytes() == before and list(tmp.iterdir()) == []


@pytest.mark.parametrize("where", ["gettempdir", "mkstemp"])
def test_no_usable_temp_folder_is_one_line(tmp_path, monkeypatch, where):
    """tempfile's FileNotFoundError ("No usable temporary directory found") was a traceback;
    so was a temp folder gone before the file was made."""
    if where == "gettempdir":
        def gettempdir():
            raise FileNotFoundError(errno.ENOENT, "No usable temporary directory found in "
                                    "['/nowhere', '/tmp']")
        monkeypatch.setattr(tempfile, "gettempdir", gettempdir)
    else:
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    res = tmp_path / "r.jsonl"
    r = runner.invoke(app, _grid(res))
    assert r.exit_code == 2, r.output
    line = _one_error_line(r)
    if where == "gettempdir":
        assert "no usable temporary folder" in line and "/nowhere" in line, line
    else:
        assert str(tmp_path / "gone") in line and "No such file" in line, line
    assert not res.exists()


def test_the_workers_still_get_the_traces(tmp_path, monkeypatch):
    """(the fixed writer still writes a whole file the workers read)"""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    res = tmp_path / "r.jsonl"
    r = runner.invoke(app, _grid(res, "600"))
    assert r.exit_code == 0, r.output
    assert len(res.read_text().splitlines()) == 1
    assert json.loads(res.read_text())["config"]["num_blocks"] == 600
    assert not list(tmp_path.glob("kvcli-sweep-*"))
