"""A `prefix_match_unit` at or below the groups' gcd over full-attention and sliding-window
groups, no Mamba group = vLLM 0.33.0's Scheduler and AsyncScheduler, step for step with their
KV events, and refused at start-up where vLLM refuses.

The thirteen cases of tests/data/sched_mixed_pmu/ (README there: 60 generated, all alike) were
answered by its oracle_mixed_pmu.py. Without a Mamba group the unit is only the hash block:
requests are hashed every unit tokens, full attention registers a prompt's tail inside a block
at the unit (`FineFullAttentionManager`), the sliding window looks up whole blocks, and no hit
lands inside a block (vLLM's partial hash hits need a Mamba group). kvcli refused the unit
here until then ("registers a prompt's partial last block under a finer hash in full
attention"), even at the gcd, which changes nothing against no unit. `X.cache.jsonl`: cache
mode over the same traces (oracle_cache_pmu.py there; 56 of 56 alike, 4 refused alike).
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest
from oracle_sched import answer_of, assert_matches, config_of, replay_case

from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay
from kvcore.engine.vllm_events import VllmEvents
from kvcore.errors import InputError
from kvcore.managers.registry import spec_from_group_config
from kvcore.prefix_match import partial_hash_hits, resolve_block_sizes, unmodelled

DATA = Path(__file__).resolve().parent / "data" / "sched_mixed_pmu"
CASES = sorted(DATA.glob("*.trace.jsonl"), key=lambda p: int(p.name[2:-12]))


def _specs(cfg: dict) -> list:
    return [spec_from_group_config(g, g["block_size"]) for g in cfg["groups"]]


def test_the_cases_are_all_there():
    assert [t.name[:-12] for t in CASES] == [
        "xp3", "xp4", "xp8", "xp9", "xp12", "xp26", "xp28", "xp30", "xp35", "xp47", "xp53",
        "xp56", "xp57"]


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_mixed_pmu_case(trace: Path):
    cfg = config_of(trace)
    expected = answer_of(trace)
    asyn = cfg["async_scheduling"]
    if "error" in expected[-1]:
        # (xp30 under async: vLLM's start-up check with two batches in flight)
        assert "vLLM would refuse to start" in expected[-1]["error"]
        with pytest.raises(InputError, match="vLLM refuses to start"):
            replay_case(trace, async_scheduling=asyn)
        return
    assert_matches(expected, replay_case(trace, async_scheduling=asyn), asyn=asyn,
                   kv_events=cfg["kv_events"])


def test_the_unit_is_the_hash_block_and_no_hit_lands_inside_a_block():
    for trace in CASES:
        cfg = config_of(trace)
        specs = _specs(cfg)
        sizes = [s.block_size for s in specs]
        unit = cfg["prefix_match_unit"]
        assert resolve_block_sizes(specs, unit, True) == (math.lcm(*sizes), unit)
        assert unit <= math.gcd(*sizes) and unit < max(sizes), trace.name
        assert not partial_hash_hits(specs, unit, True)
        assert unmodelled(specs, unit, True) is None


def test_the_unit_moves_the_keys_full_attention_announces():
    """xp47 (full 32 beside a sliding window at 64, unit 8): r0's 156 prompt tokens are stored
    at step 5 (vLLM's BlockStored) as four full-attention blocks and one sliding-window block,
    both ending at token 128 under one key: the 16th hash of the 8-token chain."""
    step = answer_of(DATA / "xp47.trace.jsonl")[5]
    full, window = step["events"]
    assert (full["block_size"], window["block_size"]) == (32, 64)
    assert len(full["block_hashes"]) == 4 and len(full["token_ids"]) == 128
    assert full["block_hashes"][3] == window["block_hashes"][0] == 3994791201136023102


def check_cache(trace: Path) -> None:
    """Cache mode (one request at a time: look up, allocate the whole prompt, free) = vLLM's
    KVCacheManager driven the same way (`X.cache.jsonl`), request by request with its events;
    refused alike where vLLM's start-up check refuses."""
    expected = answer_of(trace, "cache")
    cfg = config_of(trace)
    reqs, events = io.BytesIO(), io.BytesIO()
    sink = VllmEvents(events) if cfg.get("kv_events") else None
    opts = ReplayOptions(mode="cache", arrivals="step")
    if "error" in expected[0]:
        assert "vLLM would refuse to start" in expected[0]["error"]
        with pytest.raises(InputError, match="vLLM refuses to start"):
            replay(str(trace), opts, sink, requests_out=reqs)
        return
    s = replay(str(trace), opts, sink, requests_out=reqs)
    assert {"hit_tokens": s.hit_tokens, "prompt_tokens": s.prompt_tokens,
            "rejected": s.rejected} == expected[-1]["summary"]
    ours = {r["id"]: r["hit_tokens"] for r in map(json.loads, reqs.getvalue().splitlines())}
    assert ours == {e["id"]: e["hit"] for e in expected[:-1]}
    if sink is not None:
        # (one batch a request in both; compared as one stream)
        got = [e for x in events.getvalue().splitlines() for e in json.loads(x)["events"]]
        assert got == [e for line in expected[:-1] for e in line["events"]]


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_mixed_pmu_cache_mode(trace: Path):
    check_cache(trace)


def test_cache_mode_hits_at_the_unit():
    """xp57 (full 8 twice beside a window at 32, unit 2): vLLM's manager hits 256 of 629
    prompt tokens in cache mode."""
    assert answer_of(DATA / "xp57.trace.jsonl", "cache")[-1]["summary"] == {
        "hit_tokens": 256, "prompt_tokens": 629, "rejected": 0}
