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
from oracle_sched import (
    answer_of,
    assert_matches,
    config_of,
    replay_case,
    window_groups,
    without_groups,
)

DATA = Path(__file__).resolve().parent / "data"
CASES = sorted((DATA / "sched_dory").glob("*.trace.jsonl"))
MODEL = DATA / "refused_lifted" / "tiny-dory.config.json"


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_dory_case(trace: Path, tmp_path: Path):
    cfg = config_of(trace)
    # kvcli's groups of the model are the ones vLLM's planner built (the config line's)
    assert window_groups(MODEL, cfg["max_model_len"]) == cfg["groups"]
    run = replay_case(without_groups(trace, tmp_path), async_scheduling=cfg["async_scheduling"],
                      model_config=str(MODEL))
    error = answer_of(trace)[-1].get("error")
    if error is None:
        assert_matches(answer_of(trace), run, asyn=cfg["async_scheduling"],
                       kv_events=cfg["kv_events"])
        return
    # vLLM refuses the pool at start-up; a replay given num_blocks runs it and says so
    needed, usable = error.split("needs ")[1].split(" blocks, ")
    usable = usable.split(" usable")[0]
    assert any(f"needs {needed} blocks" in w and f"only {usable} are usable" in w
               and "vLLM refuses to start" in w for w in run[0].warnings), run[0].warnings


def test_the_groups():
    """Seven sliding groups (blocks 0, 2 and its loops, 4 and its loops), then the full one."""
    sliding = {"type": "sliding_window", "block_size": 16, "sliding_window": 64}
    assert window_groups(MODEL, 256) == [sliding] * 7 + [{"type": "full", "block_size": 16}]
