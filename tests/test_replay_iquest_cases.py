"""`replay --model-config` of a small IQuest Loop model = vLLM 0.33's schedulers over the groups
vLLM's planner builds for it, step for step with their KV events.

tests/data/refused_lifted/tiny-iquest-loop3.config.json: 3 decoder layers run 3 times, a full
cache on the first pass (layers 0-2) and a 32-token sliding window on each later one (3-8):
vLLM's planner makes a full group and two sliding groups at block 16. The answers come from
tests/data/sched_iquest/make_iquest.py (the groups: vLLM's `get_kv_cache_groups`) and
../sched_chunked_mixed/oracle_chunked_mixed.py (its README).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import check_model_case, config_groups

DATA = Path(__file__).resolve().parent / "data"
CASES = sorted((DATA / "sched_iquest").glob("*.trace.jsonl"))
MODEL = DATA / "refused_lifted" / "tiny-iquest-loop3.config.json"


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_iquest_case(trace: Path, tmp_path: Path):
    check_model_case(trace, MODEL, tmp_path)


def test_the_groups():
    """The first pass's full group, then the two later passes' sliding groups, all at 16."""
    sliding = {"type": "sliding_window", "block_size": 16, "sliding_window": 32}
    assert config_groups(MODEL, 256) == [{"type": "full", "block_size": 16}, sliding, sliding]
