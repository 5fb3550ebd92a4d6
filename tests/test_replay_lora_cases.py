"""LoRA adapters and cache salts at the scheduler level = vLLM 0.33.0's Scheduler (and, with a
CPU tier, its offloading connector) over requests that carry a `LoRARequest` and a
`cache_salt`: a block's hash domain is its adapter and salt, so a prompt hits only blocks cached
in its own domain. The oracle takes neither from a trace line, so these were answered by a copy
of it patched to pass both to vLLM's `Request` (`tests/data/sched_fresh_lora/README.md`).

Replayed with `--arrivals step` in the mode each case was recorded in, every step line, every
request's hit / preemptions / first and last step, the prefix-cache stats and the vLLM event
batches must be the oracle's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_sched import answer_of, assert_matches, config_of, replay_case
from test_offload_replay import test_offload_case as check_offload_case

CASES = sorted((Path(__file__).resolve().parent / "data" / "sched_fresh_lora")
               .glob("*.trace.jsonl"))


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_lora_case(trace: Path):
    cfg = config_of(trace)
    asyn = cfg.get("async_scheduling", False)
    if "kv_offloading_size_chunks" in cfg:
        check_offload_case(trace, "expected", asyn)
        return
    assert_matches(answer_of(trace), replay_case(trace, async_scheduling=asyn), asyn=asyn,
                   kv_events=cfg.get("kv_events", False))


def test_the_cases_mix_domains_and_hit_across_requests():
    """Each case holds requests of several adapters (or none) and salts, and requests hit (a
    regenerated set that lost them would test nothing of the domains)."""
    assert len(CASES) == 4
    for trace in CASES:
        reqs = [json.loads(x) for x in trace.read_text().splitlines()[1:]]
        assert len({r.get("lora") for r in reqs}) >= 2, trace.name
        assert len({r.get("cache_salt") for r in reqs}) >= 2, trace.name
        summary = answer_of(trace)[-1]["summary"]
        assert sum(r["num_cached_tokens"] for r in summary["requests"]) > 0, trace.name


def test_a_domain_changes_the_hits(tmp_path):
    """The same cases with every request in one domain hit otherwise (so the domains, not only
    the prompts, decide the oracle's answers that the case test matched)."""
    for trace in CASES:
        cfg = config_of(trace)
        lines = trace.read_text().splitlines()
        reqs = [json.loads(x) for x in lines[1:]]
        for r in reqs:
            r.pop("lora", None)
            r.pop("cache_salt", None)
        plain = tmp_path / "plain.trace.jsonl"
        plain.write_text("\n".join([lines[0], *map(json.dumps, reqs)]) + "\n")
        asyn = cfg.get("async_scheduling", False)
        mixed = replay_case(trace, async_scheduling=asyn)[2]
        one = replay_case(plain, async_scheduling=asyn)[2]
        assert sum(r["hit_tokens"] for r in mixed.values()) < \
            sum(r["hit_tokens"] for r in one.values()), trace.name
