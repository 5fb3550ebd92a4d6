"""Speculative decoding (n-gram) with LoRA adapters and cache salts = vLLM 0.33.0's schedulers:
a request's drafts are verified in its own hash domain (adapter and salt), so a prompt hits only
blocks its domain cached, also when the padded admission or a draft-completed block is the one
that would have hit. No other folder draws both: ../sched_spec has no adapters, and
../sched_fresh_lora / ../offload_lora have no drafts. The answers come from a copy of the
n-gram oracle that passes each line's `lora` and `cache_salt` to vLLM's `Request`
(tests/data/sched_spec_lora/README.md).

Every step line, the drafts each step verified, every request's hit / preemptions / first and
last step, the prefix-cache stats, vLLM's SpecDecodingStats and the KV event batches must be the
oracle's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_sched import answer_of, check_spec_case, config_of, replay_case

DATA = Path(__file__).resolve().parent / "data" / "sched_spec_lora"
CASES = sorted(DATA.glob("*.trace.jsonl"))


def requests_of(trace: Path) -> list[dict]:
    return [json.loads(x) for x in trace.read_text().splitlines()[1:]]


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_spec_lora_case(trace: Path):
    check_spec_case(trace)


def test_the_cases_cover_both_modes_groups_domains_hits_and_preemptions():
    """A regenerated set that lost one of these would test less than it says."""
    assert len(CASES) == 20
    seen = set()
    for trace in CASES:
        cfg, reqs = config_of(trace), requests_of(trace)
        assert len({r.get("lora") for r in reqs}) >= 2, trace.name
        summary = answer_of(trace)[-1]["summary"]
        assert summary["spec"]["num_drafts"] > 0, trace.name
        seen.add("async" if cfg.get("async_scheduling") else "sync")
        if cfg.get("groups"):
            seen.add("hybrid")
        if sum(r["num_cached_tokens"] for r in summary["requests"]):
            seen.add("hits")
        if summary["totals"]["preemptions"]:
            seen.add("preempted")
        if any(r.get("cache_salt") is not None for r in reqs):
            seen.add("salted")
    assert seen == {"async", "sync", "hybrid", "hits", "preempted", "salted"}


def test_without_the_domains_the_hits_differ(tmp_path):
    """The same cases with every request in one domain (no adapter, no salt) hit otherwise in
    all but one: the domains, not only the prompts and drafts, decide the hits the case test
    matched (the event payloads, which name the adapter, are left out of this)."""
    same = []
    for trace in CASES:
        lines = trace.read_text().splitlines()
        reqs = requests_of(trace)
        for r in reqs:
            r.pop("lora", None)
            r.pop("cache_salt", None)
        plain = tmp_path / trace.name
        plain.write_text("\n".join([lines[0], *map(json.dumps, reqs)]) + "\n")
        asyn = config_of(trace).get("async_scheduling", False)
        one = replay_case(plain, async_scheduling=asyn)[2]
        summary = answer_of(trace)[-1]["summary"]
        if {k: r["hit_tokens"] for k, r in one.items()} == \
                {r["id"]: r["num_cached_tokens"] for r in summary["requests"]}:
            same.append(trace.name.split(".")[0])
    # (its domains never split a prefix that another request would have hit)
    assert same == ["fRa11631"]
