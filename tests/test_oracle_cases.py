"""Every recorded oracle case (the real vLLM 0.33.0's answers) replays exactly, events included.

The chunked-* cases belong to the chunked-local manager's tests; they run here too once a
``chunked_local`` group type is registered.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.engine.op_script import load_script
from kvcore.engine.script_runner import run_ops
from kvcore.managers.registry import GROUP_TYPES

CASES = Path(__file__).resolve().parent / "data" / "oracle_cases"   # see data/README.md
FRESH = Path(__file__).resolve().parent / "data" / "oracle_fresh"


def _cases(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.ops.json*")) if folder.is_dir() else []


def _expected(ops_path: Path) -> Path:
    return ops_path.with_name(ops_path.name.split(".ops.")[0] + ".expected.jsonl")


def _norm(x):
    # Tuples (extra keys) become lists, as in the oracle's JSON.
    return json.loads(json.dumps(x))


def assert_same(expected: list[dict], got: list[dict]) -> None:
    assert len(got) == len(expected), f"{len(got)} lines, expected {len(expected)}"
    for i, (e, g) in enumerate(zip(expected, got), start=1):
        for key, value in e.items():
            if key in ("totals", "error", "note"):  # the oracle's own tallies, not compared
                continue
            assert key in g, f"line {i}: missing key {key!r}"
            if isinstance(value, float):
                assert abs(value - g[key]) <= 1e-9, f"line {i}: {key}"
            else:
                assert _norm(g[key]) == value, f"line {i} ({e.get('op')} {e.get('id')}): {key}"


def _params(folder: Path):
    out = []
    for p in _cases(folder):
        name = p.name.split(".ops.")[0]
        marks = []
        if name.startswith("chunked") and "chunked_local" not in GROUP_TYPES:
            marks.append(pytest.mark.skip(reason="chunked_local group type not registered"))
        out.append(pytest.param(p, id=name, marks=marks))
    return out


@pytest.mark.parametrize("ops_path", _params(CASES))
def test_recorded_case(ops_path: Path) -> None:
    expected = [json.loads(line) for line in _expected(ops_path).read_text().splitlines()
                if line.strip()]
    cfg, ops = load_script(str(ops_path))
    assert_same(expected, list(run_ops(cfg, ops, str(ops_path))))


@pytest.mark.parametrize("ops_path", _params(FRESH))
def test_fresh_oracle_stream(ops_path: Path) -> None:
    """Streams we generated with the oracle (tests/data/oracle_fresh), beyond the shared set."""
    expected = [json.loads(line) for line in _expected(ops_path).read_text().splitlines()
                if line.strip()]
    cfg, ops = load_script(str(ops_path))
    assert_same(expected, list(run_ops(cfg, ops, str(ops_path))))


def test_the_shared_cases_are_there() -> None:
    names = {p.name.split(".ops.")[0] for p in _cases(CASES)}
    assert len(names) == 26                    # 6 each of full, sliding, hybrid, chunked + 2 tiny
    for prefix in ("full-", "sliding-", "hybrid-"):
        assert any(n.startswith(prefix) for n in names), prefix
    assert {"hybrid-tiny", "reject-tiny"} <= names
