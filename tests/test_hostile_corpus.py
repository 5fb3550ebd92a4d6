"""A hostile-input corpus against every command that reads a trace (replay, stats, curve, cluster):
exit code, exactly one line on stderr for an error, never a traceback."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

SAMPLE = Path(__file__).resolve().parents[1] / "traces" / "multiturn-chat.jsonl"
COMMANDS = ("replay", "stats", "curve", "cluster")


def _lines(n: int = 6) -> list[dict]:
    with open(SAMPLE) as f:
        return [json.loads(line) for _, line in zip(range(n), f)]


def _write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def make(kind: str, tmp: Path) -> Path:
    p = tmp / f"{kind}.jsonl"
    rows = _lines()
    if kind == "empty":
        p.write_text("")
    elif kind == "directory":
        p.mkdir()
    elif kind == "missing":
        pass
    elif kind == "truncated_gzip":
        p.write_bytes(gzip.compress(SAMPLE.read_bytes())[:5000])
    elif kind == "bom":
        p.write_bytes(b"\xef\xbb\xbf" + SAMPLE.read_bytes())
    elif kind == "duplicate_ids":
        _write(p, [{**r, "id": "same"} for r in rows])
    elif kind == "timestamps_backwards":
        _write(p, [{**r, "timestamp": 1000.0 - 100 * i} for i, r in enumerate(rows)])
    elif kind == "unicode_ids":
        _write(p, [{**r, "id": f"请求-{i}-🙂"} for i, r in enumerate(rows)])
    elif kind == "malformed_json":
        p.write_text('{"timestamp": 0\n')
    elif kind == "nul_bytes":
        p.write_bytes(b"\x00\x00\x00\n")
    elif kind == "not_utf8":
        p.write_bytes(SAMPLE.read_bytes()[:300].split(b"\n")[0] + b"\n{\"a\": \"\xff\"}\n")
    else:
        raise AssertionError(kind)
    return p


# kind -> (exit code, what the one error line says after "error: PATH")
CASES = {
    "empty": (2, ":1: empty trace: no requests"),
    "directory": (2, ": is a directory, not a file"),
    "missing": (2, ": no such file"),
    "truncated_gzip": (2, (": cannot read: Compressed file ended before the end-of-stream marker "
                          "was reached")),
    "duplicate_ids": (2, ":2: field 'id': duplicate request id 'same'"),
    "malformed_json": (2, ":1: malformed JSON: "),
    "nul_bytes": (2, ":1: malformed JSON: "),
    "not_utf8": (2, ":2: not UTF-8 text: byte 0xff at column 8"),
    "bom": (0, None),
    "timestamps_backwards": (0, None),
    "unicode_ids": (0, None),
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind", list(CASES))
def test_hostile_input(tmp_path, command, kind):
    path = make(kind, tmp_path)
    res = CliRunner().invoke(app, [command, str(path), "--json"])
    code, said = CASES[kind]
    assert res.exit_code == code, res.output
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    if code == 2:
        assert res.stderr.count("\n") == 1 and res.stderr.startswith(f"error: {path}{said}")
        assert res.stdout == ""
    else:
        doc = json.loads(res.stdout)    # one whole JSON document
        if kind == "timestamps_backwards" and command != "curve":
            said = ("5 request(s) have a timestamp earlier than a line before them: replayed "
                    "in timestamp order (ties in file order)")
            assert doc["warnings"][0] == said       # then the clock's (test_replay_warnings)
            assert [w[:19] for w in doc["warnings"][1:]] == ["uncalibrated clock:"]
            assert res.stderr == "".join(f"warning: {w}\n" for w in doc["warnings"])
