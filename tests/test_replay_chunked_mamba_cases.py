"""A chunked local attention group at the hash block beside coarser Mamba groups in "align" mode
= vLLM 0.33's Scheduler and AsyncScheduler, step for step with their KV events, and refused
where vLLM fails, in its words.

With partial hash hits (a Mamba block coarser than the hash block, every other group full
attention, Mamba, or at the hash block) vLLM's hits land on the hash block, and its chunked
local manager asserts only that its block is that alignment: a chunked group at the hash block
(`--prefix-match-unit`, or the groups' gcd) runs. A group that turns partial hits off (a
sliding window or a second chunked group coarser than the hash block) makes the alignment the
lcm again, and the chunked group fails at the first lookup; a chunked group coarser than the
unit (`cxN`: partial hits off) runs where its block is the lcm. kvcli refused those it runs
until then (the lcm rule, and the unit "not modelled"). The answers come from
tests/data/sched_chunked_mamba/oracle_chunked_mamba.py (its README: 380 cases, 760 runs).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import answer_of, check_run, config_of, replay_case

from kvcore.errors import InputError
from kvcore.managers.registry import spec_from_group_config
from kvcore.prefix_match import cache_hit_alignment, partial_hash_hits, resolve_block_sizes

DATA = Path(__file__).resolve().parent / "data" / "sched_chunked_mamba"
CASES = sorted(DATA.glob("*.trace.jsonl"), key=lambda p: (p.name[:2], int(p.name[2:-12])))
RUNS = [(t, asyn) for t in CASES for asyn in (False, True)]
REASON = "KV cache groups with different block sizes are not compatible with chunked local " \
    "attention now"


def _error(trace: Path, asyn: bool) -> str | None:
    return answer_of(trace, "async.expected" if asyn else "expected")[-1].get("error")


def test_the_cases_are_all_there():
    assert [t.name[:-12] for t in CASES] == [
        "ck7", "ck14", "ck24", "ck37", "ck43", "ck47", "ck48", "ck50", "ck52", "ck63", "ck69",
        "ck93", "ck147", "ck157", "cx12", "cx16", "cx20"]


@pytest.mark.parametrize("trace, asyn", RUNS,
                         ids=[f"{t.name[:-12]}-{'async' if a else 'sync'}" for t, a in RUNS])
def test_chunked_mamba_case(trace: Path, asyn: bool):
    if _error(trace, asyn) != f"AssertionError: {REASON}":
        check_run(trace, asyn)      # (ck43 async: vLLM's start-up check refuses the pool)
        return
    with pytest.raises(InputError) as e:
        replay_case(trace, async_scheduling=asyn)
    assert (e.value.field, e.value.line) == ("config.groups", 1)
    assert f"'{REASON}'" in e.value.message


def _layout(trace: Path) -> tuple[list, int, int]:
    cfg = config_of(trace)
    specs = [spec_from_group_config(g, g.get("block_size", cfg["block_size"]))
             for g in cfg["groups"]]
    unit = cfg.get("prefix_match_unit")
    return specs, resolve_block_sizes(specs, unit, True)[1], cache_hit_alignment(specs, unit,
                                                                                  True)


def test_vllm_runs_exactly_the_chunked_groups_at_the_hit_alignment():
    """vLLM runs a case exactly when every chunked group is at the hit alignment. `ckN`: where
    it ran, partial hash hits are on and the alignment is the hash block; where it failed, they
    are off (the alignment: the lcm). `cxN`: the chunked group coarser than the unit, partial
    hits are off, and it runs where its block is the lcm."""
    for trace in CASES:
        specs, hash_bs, align = _layout(trace)
        chunked = {s.block_size for s in specs if s.kind == "chunked_local"}
        failed = _error(trace, False) == f"AssertionError: {REASON}"
        assert (chunked == {align}) is not failed, trace.name
        assert any(s.kind == "mamba" and s.block_size > hash_bs for s in specs)
        partial = partial_hash_hits(specs, hash_bs, True)
        if trace.name.startswith("ck"):
            assert partial is not failed and (failed or align == hash_bs), trace.name
        else:
            assert not partial and min(chunked) > hash_bs, trace.name


def test_a_unit_kvcli_does_not_model_yields_to_vllms_failure():
    """ck37: unit 8, Mamba1 at 32, chunked at 8, a sliding window at 32 (partial hits off):
    kvcli does not model that unit, but vLLM fails at its first lookup before the unit matters;
    refused in vLLM's words, not as "must be the block size here"."""
    with pytest.raises(InputError) as e:
        replay_case(DATA / "ck37.trace.jsonl")
    assert e.value.message == (
        "KV cache groups of different block sizes (8, 32 tokens) with a chunked local "
        "attention group of 8 tokens, finer than their lcm (32), fail in vLLM at its first "
        f"prefix-cache lookup: '{REASON}' (they run with prefix caching off)")


def test_hits_land_inside_a_mamba_block():
    """ck52 (unit 4, chunked 4 beside two Mamba2 groups at 16): vLLM's hits end inside a Mamba
    block, 76 tokens in sync, 64 in async; kvcli's alike."""
    for asyn, total in ((False, 76), (True, 64)):
        summary = answer_of(DATA / "ck52.trace.jsonl",
                            "async.expected" if asyn else "expected")[-1]["summary"]
        cached = [r["num_cached_tokens"] for r in summary["requests"]]
        assert sum(cached) == total and any(c % 16 for c in cached)
        _, _, by_id, _ = replay_case(DATA / "ck52.trace.jsonl", async_scheduling=asyn)
        assert [by_id[r["id"]]["hit_tokens"] for r in summary["requests"]] == cached
