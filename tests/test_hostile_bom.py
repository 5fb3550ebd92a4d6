"""A UTF-8 byte-order mark at the start of a trace (plain, gzip, stdin, Azure's CSV), an event
stream or an op script is accepted (issue 11, item 2): the outputs equal those of the same file
without it."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from kvcli.app import app

ROOT = Path(__file__).resolve().parents[1]
SP = str(ROOT / "traces" / "shared-prefix.jsonl")

runner = CliRunner()

BOM = b"\xef\xbb\xbf"


def _summary(args: list[str]) -> dict:
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    doc = orjson.loads(res.stdout)
    for key in ("trace", "wall_time_s"):
        doc.pop(key, None)
    return doc


@pytest.mark.parametrize("gz", [False, True])
def test_bom_trace(tmp_path, gz):
    data = BOM + Path(SP).read_bytes()
    trace = tmp_path / ("t.jsonl.gz" if gz else "t.jsonl")
    trace.write_bytes(gzip.compress(data) if gz else data)
    assert _summary(["replay", str(trace)]) == _summary(["replay", SP])
    assert _summary(["curve", str(trace)]) == _summary(["curve", SP])


def test_bom_trace_on_stdin():
    res = runner.invoke(app, ["replay", "-", "--json"], input=BOM + Path(SP).read_bytes())
    assert res.exit_code == 0, res.output


def test_bom_csv_trace(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_bytes(BOM + b"TIMESTAMP,ContextTokens,GeneratedTokens\n"
                            b"2023-11-16 18:15:46.6805900,374,44\n")
    res = runner.invoke(app, ["replay", str(trace), "--json"])
    assert res.exit_code == 0, res.output


def test_bom_event_stream(tmp_path):
    ev = tmp_path / "ev.jsonl"
    assert runner.invoke(app, ["replay", SP, "--events", str(ev)]).exit_code == 0
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(BOM + ev.read_bytes())
    assert _summary(["stats", str(bom)]) == _summary(["stats", str(ev)])


def test_bom_op_script(tmp_path):
    ops = ROOT / "tests" / "data" / "oracle_cases" / "chunked-1.ops.jsonl"
    bom = tmp_path / "ops.jsonl"
    bom.write_bytes(BOM + ops.read_bytes())
    a = runner.invoke(app, ["script", str(ops)])
    b = runner.invoke(app, ["script", str(bom)])
    assert a.exit_code == b.exit_code == 0, b.output
    assert a.stdout == b.stdout
