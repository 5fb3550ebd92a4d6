"""More hostile outputs: a stdout / stderr whose encoding cannot hold what is written, output
names near and past the file-name limit, a symlink loop given as an output, and an overwritten
output's permissions. Each runs the CLI in a subprocess, as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_hostile_outputs import one_error

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "traces" / "multiturn-chat.jsonl"


def kvcli(*args, env: dict | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kvcli", *map(str, args)], cwd=ROOT,
                          capture_output=True, timeout=timeout, check=False,
                          env={**os.environ, **(env or {})})


def ok(res: subprocess.CompletedProcess) -> None:
    err = res.stderr.decode(errors="replace")
    assert res.returncode == 0, err
    assert "Traceback" not in err and "UnicodeEncodeError" not in err, err


def unicode_trace(tmp_path: Path) -> Path:
    """Three requests of the sample, the second with the id 'réq-✓'."""
    lines = SAMPLE.read_text().splitlines()[:3]
    out = []
    for i, line in enumerate(lines):
        rec = json.loads(line)
        rec["id"] = "réq-✓" if i == 1 else f"r{i}"
        out.append(json.dumps(rec, ensure_ascii=False))
    p = tmp_path / "u.jsonl"
    p.write_text("\n".join(out) + "\n", encoding="utf-8")
    return p


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_narrow_encoding_is_written_with_escapes_not_a_traceback(tmp_path, encoding):
    env = {"PYTHONIOENCODING": encoding}
    stats = kvcli("stats", SAMPLE, env=env)           # the sparkline, in ASCII
    ok(stats)
    usage = next(ln for ln in stats.stdout.splitlines() if ln.startswith(b"usage |"))
    assert b"\\u" not in usage and len(usage.split(b"|")[1]) <= 56
    assert set(usage.split(b"|")[1]) <= set(b" .:-=+*#@") and b":" in usage  # peak 12.82%
    helped = kvcli("replay", "--help", env=env)       # '…' in the help text
    ok(helped)
    assert b"--explain" in helped.stdout and b"\\u2026" in helped.stdout
    trace = unicode_trace(tmp_path)
    told = kvcli("replay", trace, "--explain", "réq-✓", env=env)
    ok(told)
    assert b"Request r" in told.stdout
    # JSON is UTF-8 bytes whatever the stream's encoding: still valid, the id intact
    as_json = kvcli("replay", trace, "--explain", "réq-✓", "--json", env=env)
    ok(as_json)
    assert json.loads(as_json.stdout)["request"] == "réq-✓"


def name_limit(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


@pytest.mark.parametrize("char", ["a", "é"])
def test_an_output_name_at_the_name_limit_is_written(tmp_path, char):
    limit = name_limit(tmp_path)
    name = char * (limit // len(char.encode()))      # 255 bytes ('a'), 254 ('é' is two)
    events, trace = tmp_path / name, tmp_path / ("t" + name[1:])
    events.touch()                                   # what the system allows, kvcli writes
    ok(kvcli("replay", SAMPLE, "--events", events))
    assert events.stat().st_size > 0
    ok(kvcli("gen", "multiturn", "--conversations", "2", "-o", trace))
    assert trace.read_text().count("\n") > 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([events.name, trace.name])


@pytest.mark.parametrize("args, flag", [
    (["gen", "multiturn", "--conversations", "2", "-o"], "--output"),
    (["replay", SAMPLE, "--events"], "--events"),
    (["cluster", SAMPLE, "--replicas", "1", "--decisions"], "--decisions"),
])
def test_an_output_name_past_the_name_limit_is_refused_before_the_work(tmp_path, args, flag):
    # (the work ran, then the rename raised OSError 'File name too long': a traceback, exit 1)
    name = "a" * (name_limit(tmp_path) + 1)
    res = kvcli(*args, tmp_path / name)
    assert one_error(res, 2) == (f"error: option {flag}: cannot write {tmp_path / name}: "
                                 "file name too long")
    assert list(tmp_path.iterdir()) == []


def test_an_overwritten_output_keeps_its_permissions(tmp_path):
    trace, events, fresh = tmp_path / "t.jsonl", tmp_path / "ev.jsonl", tmp_path / "new.jsonl"
    for p, mode in ((trace, 0o600), (events, 0o640)):
        p.write_text("old\n")
        p.chmod(mode)
    ok(kvcli("gen", "multiturn", "--conversations", "2", "-o", trace))
    ok(kvcli("replay", SAMPLE, "--events", events))
    assert (trace.stat().st_mode & 0o777, events.stat().st_mode & 0o777) == (0o600, 0o640)
    assert trace.read_text() != "old\n" and events.read_text() != "old\n"
    umask = os.umask(0)
    os.umask(umask)
    ok(kvcli("gen", "multiturn", "--conversations", "2", "-o", fresh))   # new: open()'s mode
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_symlink_loop_as_an_output_is_refused_before_the_work(tmp_path):
    a, b = tmp_path / "loopA", tmp_path / "loopB"
    a.symlink_to(b.name)
    b.symlink_to(a.name)
    for args, flag in ((("gen", "multiturn", "-o", a), "--output"),
                       (("replay", SAMPLE, "--events", a), "--events"),
                       (("stats", SAMPLE, "--plot", a), "--plot")):
        line = one_error(kvcli(*args), 2)
        assert flag in line and "symbolic link loop" in line, line
    assert a.is_symlink() and os.readlink(a) == b.name     # the link untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["loopA", "loopB"]
    dangling = tmp_path / "dangling"                        # still followed: its target made
    dangling.symlink_to("made.jsonl")
    ok(kvcli("gen", "multiturn", "--conversations", "2", "-o", dangling))
    assert dangling.is_symlink() and (tmp_path / "made.jsonl").stat().st_size > 0


def test_the_sparkline_keeps_its_nine_levels_in_ascii():
    from kvcli.plots import sparkline

    values = [0, 1, 2, 3, 4, 5, 6, 7, 8]
    assert sparkline(values, 8, encoding="utf-8") == " ▁▂▃▄▅▆▇█"
    assert sparkline(values, 8, encoding="ascii") == " .:-=+*#@"
    assert sparkline(values, 8, encoding="latin-1") == " .:-=+*#@"
    assert sparkline(values, 8, encoding="no-such-codec") == " .:-=+*#@"
    # squeezed: the max of each pair of buckets
    assert sparkline([0, 8, 4, 0], 8, width=2, encoding="ascii") == "@="
