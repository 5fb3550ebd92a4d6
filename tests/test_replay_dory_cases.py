"""`replay --model-config` of a small Dory model = vLLM 0.33's schedulers over the groups vLLM's
planner builds for it, step for step with their KV events.

tests/data/refused_lifted/tiny-dory.config.json: 8 blocks, attention at 0, 2, 4 (sliding over
64 tokens) and 6 (full), blocks 2 and 4 recurrent over 3 loops with a cache a loop: vLLM's
planner makes eight one-layer groups at block 16, seven sliding then the full one. The answers
come from tests/data/sched_dory/make_dory.py (the groups: vLLM's `get_kv_cache_groups`) and
../sched_chunked_mixed/oracle_chunked_mixed.py (its README).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import check_model_case, config_groups

DATA = Path(__file__).resolve().parent / "data"
CASES = sorted((DATA / "sched_dory").glob("*.trace.jsonl"))
MODEL = DATA / "refused_lifted" / "tiny-dory.config.json"


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_dory_case(trace: Path, tmp_path: Path):
    check_model_case(trace, MODEL, tmp_path)


def test_the_groups():
    """Seven sliding groups (blocks 0, 2 and its loops, 4 and its loops), then the full one."""
    sliding = {"type": "sliding_window", "block_size": 16, "sliding_window": 64}
    assert config_groups(MODEL, 256) == [sliding] * 7 + [{"type": "full", "block_size": 16}]
