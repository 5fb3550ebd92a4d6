"""Speculative decoding over the `prefix_match_unit` layouts kvcli began running on 2026-12-06
= vLLM 0.33.0's Scheduler and AsyncScheduler, step for step with their KV events, drafts and
spec stats: full attention and sliding windows without a Mamba group (`xp`), partial hash hits
beside a sliding window at the unit (`mw`), a chunked local group at the unit (`mc`), at the
hash block (`ck`) or at the lcm beside Mamba groups (`cx`); methods mtp, eagle3, eagle, ngram.

The fourteen cases of tests/data/sched_pmu_drafts/ (README there: 90 drafted cases, 180 runs,
150 matched, 30 refused alike, none differing) were answered by
../sched_mamba_mixed_pmu/with_unit.py eagle_mixed [--mtp]. No kvcore change was needed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_sched import answer_of, check_spec_case, config_of, replay_case

from kvcore.errors import InputError

DATA = Path(__file__).resolve().parent / "data" / "sched_pmu_drafts"
REFUSED = ["mcmt8"]
CASES = sorted(t for t in DATA.glob("*.trace.jsonl") if t.name[:-12] not in REFUSED)


def test_the_cases_are_all_there():
    names = sorted(t.name[:-12] for t in DATA.glob("*.trace.jsonl"))
    assert names == ["ckea11", "ckng14", "cue315f", "cue320", "cuea23", "cumt13", "cung27",
                     "cxe318f", "cxng15", "mce313", "mcmt8", "mcmt9", "mwe311", "mwea14",
                     "mwng16", "mwng3f", "xpe316", "xpmt15", "xpmt6f"]
    # both schedulers and all four methods are kept
    assert {config_of(DATA / f"{n}.trace.jsonl")["async_scheduling"] for n in names} == \
        {False, True}
    assert {config_of(DATA / f"{n}.trace.jsonl").get("spec_method", "ngram")
            for n in names} == {"mtp", "eagle3", "eagle", "ngram"}


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_pmu_drafts_case(trace: Path):
    cfg = config_of(trace)
    assert cfg["enable_prefix_caching"] and cfg["num_speculative_tokens"] >= 1
    check_spec_case(trace)


def test_eagles_legacy_drop_beside_a_chunked_group_at_the_unit_is_refused():
    """mcmt8 (MTP, the legacy hashes, no group flagged; a chunked local group at the unit 2
    beside Mamba2 at 8): vLLM's chunked manager asserts at the first lookup; kvcli refuses it
    at start-up."""
    trace = DATA / "mcmt8.trace.jsonl"
    assert answer_of(trace)[-1] == {"error": "AssertionError: Hybrid KV cache is not supported "
                                    "for eagle + chunked local attention."}
    with pytest.raises(InputError, match="drops EAGLE's last block in a chunked local"):
        replay_case(trace)


def test_hits_land_on_the_unit_inside_the_mamba_block_beside_a_window_at_the_unit():
    """mwng16 (ngram, unit 4: Mamba2 16, a window at 4, Mamba2 16): partial hash hits stay on
    beside the window at the unit, so r1-r3 hit 20 tokens and r7 40, inside the Mamba block
    (with partial hits off beside every window they would land on 16: 16 and 32)."""
    trace = DATA / "mwng16.trace.jsonl"
    hits = {r["id"]: r["num_cached_tokens"] for r in answer_of(trace)[-1]["summary"]["requests"]}
    assert hits == {"r0": 0, "r1": 20, "r2": 20, "r3": 20, "r4": 0, "r5": 0, "r6": 0, "r7": 40}
    by_id = replay_case(trace)[2]
    assert {r: by_id[r]["hit_tokens"] for r in hits} == hits


def test_the_unit_below_the_gcd_keys_the_events_without_a_mamba_group(tmp_path: Path):
    """xpmt15 (MTP, a window and full attention both at 8, unit 4, async): the unit is the hash
    block; with it taken out (hashing at the gcd, 8) every one of the 33 event batches
    differs from vLLM's."""
    trace = DATA / "xpmt15.trace.jsonl"
    vllm = [e["events"] for e in answer_of(trace)[:-1] if e.get("events")]
    assert len(vllm) == 33 and replay_case(trace, async_scheduling=True)[3] == vllm
    lines = trace.read_text().splitlines()
    first = json.loads(lines[0])
    assert first["config"].pop("prefix_match_unit") == 4
    bare = tmp_path / "x.trace.jsonl"
    bare.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    ours = replay_case(bare, async_scheduling=True)[3]
    assert len(ours) == 33 and all(a != b for a, b in zip(ours, vllm))
