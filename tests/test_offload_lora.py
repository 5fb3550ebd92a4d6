"""LoRA adapters and cache salts with a CPU tier, over one KV cache group and hybrid groups,
step for step against vLLM 0.33.

A block's hash folds in its request's adapter name and cache salt, and the offloading
connector keys a CPU chunk by the hash of its last block (with the group's index over several
groups), so the same prompt under two adapters or salts is two sets of CPU chunks: stored,
evicted and loaded apart. vLLM's CPU `BlockStored` events carry no adapter (the connector's
placeholder payload: `lora_id` and `lora_name` null unless `self_describing_kv_events` is on).

The 9 cases of `data/offload_lora/` (README there: drawn by `make_lora_offload.py`, answered
by the oracle's `sched_offload` patched by `patch_oracle.py`) replayed with `--arrivals step`
in their recorded mode, compared as `test_offload_replay` compares a CPU-tier case: step lines,
jobs and keys, request hits, the summary's `offload` object and the vLLM event batches.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_offload_replay as one_group
from oracle_sched import answer_of, config_of, replay_case

DATA = Path(__file__).parent / "data" / "offload_lora"
CASES = sorted(DATA.glob("*.trace.jsonl"))


def _asyn(trace: Path) -> bool:
    return bool(config_of(trace).get("async_scheduling"))


@pytest.mark.parametrize("trace", CASES, ids=[t.name.split(".")[0] for t in CASES])
def test_lora_offload_case(trace: Path) -> None:
    one_group.test_offload_case(trace, "expected", _asyn(trace))


def _domains(trace: Path) -> dict[str, tuple]:
    reqs = [json.loads(x) for x in trace.read_text().splitlines()[1:]]
    return {r["id"]: (r.get("lora"), r.get("cache_salt")) for r in reqs}


def test_the_cases_hit_the_tier_in_several_domains() -> None:
    """Each case evicts CPU chunks and loads some in two domains or more, with KV events;
    the set covers one group and hybrid layouts, sync and async (else a regenerated set lost
    what it was kept for)."""
    assert len(CASES) == 9
    layouts, modes = set(), set()
    for t in CASES:
        cfg = config_of(t)
        summary = answer_of(t)[-1]["summary"]
        dom = _domains(t)
        hit = {dom[r["id"]] for r in summary["requests"] if r["cpu_hit_tokens"] > 0}
        assert len(hit) >= 2 and summary["offload"]["cpu_evictions"] > 0, t.name
        assert cfg["kv_events"], t.name
        layouts.add(tuple(g["type"] for g in cfg.get("groups", [{"type": "full"}])))
        modes.add(_asyn(t))
    assert modes == {False, True}
    assert ("full",) in layouts and len(layouts) >= 5, layouts
    assert any(config_of(t).get("hash_algo") == "sha256_cbor" for t in CASES)


def test_cpu_events_name_no_adapter() -> None:
    """vLLM's CPU `BlockStored` of a LoRA request is the placeholder (no adapter, no tokens);
    ours the same, which the case test compares event for event; checked here on the answers
    too, so that a kvcli that wrote the adapter would be told why it fails."""
    for t in CASES:
        for line in answer_of(t)[:-1]:
            for e in line.get("events", []):
                if e["type"] == "BlockStored" and e["medium"] == "CPU":
                    assert (e["lora_id"], e["lora_name"], e["token_ids"]) == (None, None, []), t


def test_the_domains_decide_the_tier(tmp_path: Path) -> None:
    """The same traces with every request in one domain hit or evict otherwise (so the
    domains, not only the prompts, decide what the case test matched)."""
    changed = 0
    for t in CASES:
        lines = t.read_text().splitlines()
        reqs = [json.loads(x) for x in lines[1:]]
        for r in reqs:
            r.pop("lora", None)
            r.pop("cache_salt", None)
        plain = tmp_path / t.name
        plain.write_text("\n".join([lines[0], *map(json.dumps, reqs)]) + "\n")
        mixed = replay_case(t, async_scheduling=_asyn(t))[0].offload
        one = replay_case(plain, async_scheduling=_asyn(t))[0].offload
        keys = ("gpu_hit_tokens", "cpu_hit_tokens", "cpu_evictions", "chunks_stored")
        changed += [mixed[k] for k in keys] != [one[k] for k in keys]
    assert changed == len(CASES)
