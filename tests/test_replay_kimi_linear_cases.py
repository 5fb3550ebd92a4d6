"""Kimi Linear's KV cache layout at the scheduler level = vLLM 0.33.0's Scheduler.

tests/data/sched_kimi_linear/ (README there): traces in Kimi-Linear-48B-A3B's groups at TP 4 as
vLLM plans them (tests/data/kimi_linear: three KDA groups, MambaManager with no prefill
checkpoint block, then the MLA group, FullAttentionManager; block 512), answered by the real
Scheduler and AsyncScheduler through tests/data/oracle_mamba.py. Replayed with `--arrivals
step` in each mode: every step line, every request's hit, preemptions, first and last step, the
prefix-cache stats and the vLLM event batches must be the oracle's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import check_run, config_of

DATA = Path(__file__).resolve().parent / "data" / "sched_kimi_linear"
CASES = sorted(DATA.glob("kseed*.trace.jsonl"))


def test_the_cases_are_all_there_in_kimi_linears_layout():
    assert [t.name.split(".")[0] for t in CASES] == [f"kseed{i}" for i in range(1, 7)]
    for t in CASES:
        cfg = config_of(t)
        assert (cfg["block_size"], [g["type"] for g in cfg["groups"]]) == (
            512, ["mamba", "mamba", "mamba", "full"])


@pytest.mark.parametrize("asyn", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_kimi_linear_case(trace: Path, asyn: bool):
    check_run(trace, asyn)
