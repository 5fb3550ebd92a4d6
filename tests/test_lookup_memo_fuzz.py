"""The lookup memo's differential fuzz: random configurations and traces (`lookup_memo_fuzz.py`
says what a seed draws) replayed with the memo and without, every output the same bytes, every
kept answer a full lookup's, every watch holding what its lookup read; and random op sequences
on one manager (`lookup_memo_ops_fuzz.py`: evictions, resets, EAGLE), every lookup exact.

By default a few seeds (a few seconds); a long run sets how many and from where (op sequences:
ten per replay case):

    KVCLI_FUZZ_CASES=1000 KVCLI_FUZZ_SEED=0 pytest tests/test_lookup_memo_fuzz.py

Failing seeds are listed together (each line says its configuration); `run_case(seed, ...)`
replays one again."""

from __future__ import annotations

import os
from collections import Counter

import pytest
from lookup_memo_fuzz import check_watches, run_case
from lookup_memo_ops_fuzz import run_ops_case

from kvcore.errors import InputError

# They patch the stack's classes: the pure-Python modules only.
pytestmark = pytest.mark.pure_python

CASES = int(os.environ.get("KVCLI_FUZZ_CASES", "10"))
FIRST = int(os.environ.get("KVCLI_FUZZ_SEED", "0"))


def test_random_cases_change_no_byte(tmp_path, monkeypatch):
    total: Counter = Counter()
    failed: list[str] = []
    refused = 0
    for seed in range(FIRST, FIRST + CASES):
        try:
            total += run_case(seed, tmp_path, monkeypatch)
        except InputError:
            refused += 1        # a configuration kvcli refuses (as vLLM would): nothing to compare
        except AssertionError as err:
            failed.append(f"seed {seed}: {str(err)[:600]}")
    assert not failed, "\n".join(failed)
    assert refused <= CASES // 3, refused
    assert total["kept"] > 0 and total["watches"] > 0, total  # the memo was exercised


def test_random_op_sequences_keep_exact_answers(monkeypatch):
    total: Counter = Counter()
    check_watches(monkeypatch, total)
    for seed in range(FIRST * 10, (FIRST + CASES) * 10):
        total += run_ops_case(seed)
    assert total["kept"] > 0.3 * total["lookups"] and total["resets"] > 0, total
