"""Every recorded oracle case (the real vLLM 0.33.0's answers) replays exactly, events included.

The shared chunked-* cases run here with the others, and in `test_chunked_cases.py` beside the
chunked-local manager's own fresh streams.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_ops import check_case

CASES = Path(__file__).resolve().parent / "data" / "oracle_cases"   # see data/README.md
FRESH = Path(__file__).resolve().parent / "data" / "oracle_fresh"


def _cases(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.ops.json*")) if folder.is_dir() else []


def _params(folder: Path):
    return [pytest.param(p, id=p.name.split(".ops.")[0]) for p in _cases(folder)]


@pytest.mark.parametrize("ops_path", _params(CASES))
def test_recorded_case(ops_path: Path) -> None:
    check_case(ops_path)


@pytest.mark.parametrize("ops_path", _params(FRESH))
def test_fresh_oracle_stream(ops_path: Path) -> None:
    """Streams we generated with the oracle (tests/data/oracle_fresh), beyond the shared set."""
    check_case(ops_path)


def test_the_shared_cases_are_there() -> None:
    names = {p.name.split(".ops.")[0] for p in _cases(CASES)}
    assert len(names) == 26                    # 6 each of full, sliding, hybrid, chunked + 2 tiny
    for prefix in ("full-", "sliding-", "hybrid-"):
        assert any(n.startswith(prefix) for n in names), prefix
    assert {"hybrid-tiny", "reject-tiny"} <= names
