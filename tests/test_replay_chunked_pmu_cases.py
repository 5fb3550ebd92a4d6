"""A chunked local attention group at the groups' lcm beside full-attention and sliding-window
groups (no Mamba group) with a `prefix_match_unit` finer than a block = vLLM 0.33.0's Scheduler
and AsyncScheduler, step for step with their KV events; refused where vLLM refuses or fails.

Without a Mamba group the unit is only the hash block: partial hash hits stay off, hits land on
the lcm, and the chunked manager's block is that alignment, so vLLM runs it; kvcli refused it
until then ("registers a prompt's partial last block under a finer hash in full attention").
A chunked group finer than the lcm still fails at vLLM's first lookup, with the unit as
without. The 26 cases of tests/data/sched_chunked_pmu/ (README there: 80 drawn, 61 ran and
match, 19 refused alike) were answered by ../sched_mixed_pmu/oracle_mixed_pmu.py.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from oracle_sched import answer_of, assert_matches, config_of, replay_case

from kvcore.errors import InputError
from kvcore.managers.registry import spec_from_group_config
from kvcore.prefix_match import partial_hash_hits, resolve_block_sizes, unmodelled

DATA = Path(__file__).resolve().parent / "data" / "sched_chunked_pmu"
CASES = sorted(DATA.glob("*.trace.jsonl"), key=lambda p: int(p.name[2:-12]))
REASON = ("AssertionError: KV cache groups with different block sizes are not compatible with "
          "chunked local attention now")


def _chunked(cfg: dict) -> int:
    return next(g["block_size"] for g in cfg["groups"] if g["type"] == "chunked_local")


def test_the_cases_are_all_there():
    assert [t.name[:-12] for t in CASES] == [
        "cu3", "cu5", "cu8", "cu12", "cu13", "cu14", "cu15", "cu20", "cu22", "cu23", "cu24",
        "cu26", "cu29", "cu30", "cu35", "cu38", "cu44", "cu47", "cu50", "cu57", "cu62", "cu65",
        "cu73", "cu77", "cu78", "cu79"]


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_chunked_pmu_case(trace: Path):
    cfg = config_of(trace)
    expected = answer_of(trace)
    asyn = cfg["async_scheduling"]
    error = expected[-1].get("error")
    if error is None:
        assert_matches(expected, replay_case(trace, async_scheduling=asyn), asyn=asyn,
                       kv_events=cfg["kv_events"])
        return
    with pytest.raises(InputError) as e:
        replay_case(trace, async_scheduling=asyn)
    if error.startswith("SystemExit: vLLM would refuse to start"):
        # (cu30: the pool, before any lookup)
        assert "needs 61 blocks" in error and "needs 61 blocks" in e.value.message
        return
    assert error == REASON
    assert REASON.split(": ", 1)[1] in e.value.message
    sizes = [g["block_size"] for g in cfg["groups"]]
    assert cfg["enable_prefix_caching"] and _chunked(cfg) < math.lcm(*sizes)


def test_the_unit_is_the_hash_block_and_hits_land_on_the_lcm():
    ran = 0
    for trace in CASES:
        cfg = config_of(trace)
        if "error" in answer_of(trace)[-1] or not cfg["enable_prefix_caching"]:
            continue
        specs = [spec_from_group_config(g, g["block_size"]) for g in cfg["groups"]]
        sizes = [s.block_size for s in specs]
        unit = cfg["prefix_match_unit"]
        assert resolve_block_sizes(specs, unit, True) == (math.lcm(*sizes), unit)
        assert unit < _chunked(cfg) == math.lcm(*sizes), trace.name
        assert not partial_hash_hits(specs, unit, True)
        assert unmodelled(specs, unit, True) is None
        ran += 1
    assert ran == 18


def test_hits_at_the_lcm_and_the_unit_in_the_events():
    """cu35 (chunked 96 beside a sliding 32 and full 48, unit 8): vLLM admits 28 requests with
    hits, 5,088 tokens, all multiples of the lcm 96, through 37 preemptions (the unit taken
    out of the trace, kvcli's KV events differ from vLLM's: README)."""
    lines = answer_of(DATA / "cu35.trace.jsonl")
    hits = [v for line in lines for v in line.get("admitted", {}).values() if v]
    assert (len(hits), sum(hits)) == (28, 5088) and all(h % 96 == 0 for h in hits)
    assert sum(len(line["preempted"]) for line in lines if "preempted" in line) == 37
