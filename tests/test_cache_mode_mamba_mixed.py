"""Cache mode (one request at a time: look up, allocate the whole prompt, free) over Mamba groups
in "align" mode beside attention groups of other block sizes = vLLM 0.33.0's KVCacheManager
driven the same way, request by request with its KV events.

The eleven cases of tests/data/cache_mode_mamba_mixed/ (README there: 240 runs, all matched)
were answered by its oracle_cache_mixed.py: the manager vLLM's Scheduler holds for these groups,
each request a step of its own. The three `cpu` ones have a `prefix_match_unit` finer than every
block beside a sliding window not at the unit (no partial hash hits), which kvcli refused until
then. Only Mamba2 groups hit here (a whole prompt in one allocation leaves
a Mamba1 state at no block boundary); the hits sit on the groups' lcm (the hash block where a
group is finer than a Mamba block, partial hits).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from oracle_sched import answer_of, config_of

from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay
from kvcore.engine.vllm_events import VllmEvents

DATA = Path(__file__).resolve().parent / "data" / "cache_mode_mamba_mixed"
CASES = sorted(DATA.glob("*.trace.jsonl"))


def test_the_cases_are_all_there():
    assert [t.name[:-12] for t in CASES] == [
        "cm10", "cm13", "cm16", "cm34", "cm58", "cm68", "cm73", "cm79", "cpu34", "cpu48",
        "cpu76"]


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_cache_mode_mamba_mixed_case(trace: Path):
    expected = answer_of(trace)
    cfg = config_of(trace)
    reqs, events = io.BytesIO(), io.BytesIO()
    sink = VllmEvents(events) if cfg.get("kv_events") else None
    s = replay(str(trace), ReplayOptions(mode="cache", arrivals="step"), sink,
               requests_out=reqs)
    assert {"hit_tokens": s.hit_tokens, "prompt_tokens": s.prompt_tokens,
            "rejected": s.rejected} == expected[-1]["summary"]
    ours = {r["id"]: r["hit_tokens"] for r in map(json.loads, reqs.getvalue().splitlines())}
    assert ours == {e["id"]: e["hit"] for e in expected[:-1]}
    assert expected[-1]["summary"]["hit_tokens"] > 0
    if sink is not None:
        # (one batch a request in both; compared as one stream)
        got = [e for x in events.getvalue().splitlines() for e in json.loads(x)["events"]]
        assert got == [e for line in expected[:-1] for e in line["events"]]
    sizes = {g.get("block_size", cfg["block_size"]) for g in cfg["groups"]}
    assert len(sizes) >= 2
