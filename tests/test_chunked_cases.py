"""Every chunked-local oracle case (the real vLLM 0.33.0's answers) replays exactly through
`kvcli script`'s runner: the shared `chunked-*` cases and our fresh streams in
tests/data/chunked_fresh (made with `oracle harness trace` on scripts written for this test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.engine.op_script import load_script
from kvcore.engine.script_runner import run_ops

CASES = Path(__file__).resolve().parent / "data" / "oracle_cases"   # see data/README.md
FRESH = Path(__file__).resolve().parent / "data" / "chunked_fresh"


def _norm(x):
    return json.loads(json.dumps(x))


def _check(ops_path: Path) -> None:
    exp_path = ops_path.with_name(ops_path.name.split(".ops.")[0] + ".expected.jsonl")
    expected = [json.loads(l) for l in exp_path.read_text().splitlines() if l.strip()]
    cfg, ops = load_script(str(ops_path))
    got = list(run_ops(cfg, ops, str(ops_path)))
    assert len(got) == len(expected)
    for i, (e, g) in enumerate(zip(expected, got), start=1):
        for key, value in e.items():
            if key in ("totals", "error", "note"):
                continue
            assert key in g, f"line {i}: missing {key!r}"
            if isinstance(value, float):
                assert abs(value - g[key]) <= 1e-9, f"line {i}: {key}"
            else:
                assert _norm(g[key]) == value, f"line {i} ({e.get('op')} {e.get('id')}): {key}"


SHARED_CASES = sorted(CASES.glob("chunked-*.ops.json*"))
FRESH_CASES = sorted(FRESH.glob("*.ops.json*"))


def test_shared_chunked_cases_exist() -> None:
    assert len(SHARED_CASES) == 6              # chunked-1 .. chunked-6
    assert len(FRESH_CASES) >= 3


@pytest.mark.parametrize("ops_path", SHARED_CASES, ids=lambda p: p.name.split(".")[0])
def test_shared_chunked_case(ops_path: Path) -> None:
    _check(ops_path)


@pytest.mark.parametrize("ops_path", FRESH_CASES, ids=lambda p: p.name.split(".")[0])
def test_fresh_chunked_case(ops_path: Path) -> None:
    _check(ops_path)
