"""Replaying a recorded oracle op script and comparing with the real vLLM 0.33.0's answers, for
the oracle and chunked-local case tests (not a test module)."""

from __future__ import annotations

import json
from pathlib import Path

from kvcore.engine.op_script import load_script
from kvcore.engine.script_runner import run_ops


def _norm(x):
    # Tuples (extra keys) become lists, as in the oracle's JSON.
    return json.loads(json.dumps(x))


def expected_lines(ops_path: Path) -> list[dict]:
    """The oracle's answers beside ``NAME.ops.json[l]``: ``NAME.expected.jsonl``."""
    path = ops_path.with_name(ops_path.name.split(".ops.")[0] + ".expected.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def assert_same(expected: list[dict], got: list[dict]) -> None:
    """Line for line, every key the oracle wrote (floats to 1e-9) but its own tallies."""
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


def check_case(ops_path: Path) -> None:
    """Replay the op script through `kvcli script`'s runner and compare with its answers."""
    cfg, ops = load_script(str(ops_path))
    assert_same(expected_lines(ops_path), list(run_ops(cfg, ops, str(ops_path))))
