"""File names that are not UTF-8, or hold a newline: Python holds the bytes as surrogates, which
no JSON writer takes (`replay --json`, `--events`, `curve`/`stats`/`cluster --json` and a
sweep's results line ended in a UnicodeEncodeError; the sweep left an empty results file),
and a newline split the one-line error in two. Outputs record `path_label`'s escaped form."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import path_label

runner = CliRunner()
SMALL = Path(__file__).resolve().parents[1] / "traces" / "shared-prefix.jsonl"
BAD = os.fsdecode(b"bad\xffname.jsonl")


def test_path_label():
    assert path_label("a/café.jsonl") == "a/café.jsonl"
    assert path_label(BAD) == "bad\\xffname.jsonl"
    assert path_label("new\nline.jsonl") == "new\\nline.jsonl"


@pytest.mark.parametrize("args", [
    ["replay", "--json"], ["replay", "--mode", "cache", "--json"], ["curve", "--json"],
    ["stats", "--json"], ["cluster", "--json"]])
def test_a_name_that_is_not_utf8_is_recorded_escaped(tmp_path, args):
    trace = tmp_path / BAD
    shutil.copy(SMALL, trace)
    r = runner.invoke(app, [args[0], str(trace), *args[1:]])
    assert r.exit_code == 0, r.output
    doc = orjson.loads(r.stdout)
    shown = (doc["source"] if args[0] == "stats" else doc)["trace"]
    assert shown == f"{tmp_path}/bad\\xffname.jsonl"


def test_events_and_a_sweep_record_it_escaped(tmp_path):
    trace = tmp_path / BAD
    shutil.copy(SMALL, trace)
    events, results = tmp_path / "ev.jsonl", tmp_path / "r.jsonl"
    r = runner.invoke(app, ["replay", str(trace), "--events", str(events)])
    assert r.exit_code == 0, r.output
    header = orjson.loads(events.read_bytes().split(b"\n", 1)[0])
    assert header["trace"] == f"{tmp_path}/bad\\xffname.jsonl"
    r = runner.invoke(app, ["sweep", "--trace", str(trace), "--set", "num_blocks=512,1024",
                            "--results", str(results), "--jobs", "1", "--json"])
    assert r.exit_code == 0, r.output
    lines = [orjson.loads(x) for x in results.read_bytes().splitlines()]
    shown = f"{tmp_path}/bad\\xffname.jsonl"
    assert [x["trace"] for x in lines] == [shown] * 2
    assert [j["trace"] for j in orjson.loads(r.stdout)["jobs"]] == [shown] * 2


def test_a_newline_in_a_name_keeps_the_error_on_one_line(tmp_path):
    trace = tmp_path / "new\nline.jsonl"
    shutil.copy(SMALL, trace)
    r = runner.invoke(app, ["replay", str(trace), "--num-blocks", "3"])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"error: {tmp_path}/new\\nline.jsonl:")


def test_every_error_is_one_line(tmp_path):
    # a spec's name, an output's folder: the message named them raw, over two or three lines
    folder = f"{tmp_path}/no\\ndir"
    events = f"option --events: cannot write {folder}/e.jsonl: the folder {folder} does not exist"
    for args, said in (
            (["sweep", str(tmp_path / "nl\nspec.toml")],
             f"{tmp_path}/nl\\nspec.toml: no such file"),
            (["sweep", str(tmp_path / BAD)], f"{tmp_path}/bad\\xffname.jsonl: no such file"),
            (["replay", str(SMALL), "--events", str(tmp_path / "no\ndir" / "e.jsonl")],
             events)):
        r = runner.invoke(app, args)
        assert (r.exit_code, r.stdout, r.stderr) == (2, "", f"error: {said}\n")
