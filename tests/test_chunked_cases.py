"""Every chunked-local oracle case (the real vLLM 0.33.0's answers) replays exactly through
`kvcli script`'s runner: the shared `chunked-*` cases and our fresh streams in
tests/data/chunked_fresh (made with `oracle harness trace` on scripts written for this test)."""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_ops import check_case

CASES = Path(__file__).resolve().parent / "data" / "oracle_cases"   # see data/README.md
FRESH = Path(__file__).resolve().parent / "data" / "chunked_fresh"
SHARED_CASES = sorted(CASES.glob("chunked-*.ops.json*"))
FRESH_CASES = sorted(FRESH.glob("*.ops.json*"))


def test_shared_chunked_cases_exist() -> None:
    assert len(SHARED_CASES) == 6              # chunked-1 .. chunked-6
    assert len(FRESH_CASES) >= 3


@pytest.mark.parametrize("ops_path", SHARED_CASES, ids=lambda p: p.name.split(".")[0])
def test_shared_chunked_case(ops_path: Path) -> None:
    check_case(ops_path)


@pytest.mark.parametrize("ops_path", FRESH_CASES, ids=lambda p: p.name.split(".")[0])
def test_fresh_chunked_case(ops_path: Path) -> None:
    check_case(ops_path)
