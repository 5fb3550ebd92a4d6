"""The CPU tier over KV cache groups of several block sizes with speculative decoding, and with a
prefix-match unit, step for step against vLLM 0.33.

`data/offload_mixed_spec/` (README there): ../offload_mixed's layouts with ngram, eagle, eagle3
and mtp drafts (one full group flagged `is_eagle_group` or none), some with a
`prefix_match_unit` finer than every group's block, answered by vLLM's real Scheduler /
AsyncScheduler and OffloadingConnector. Nothing of vLLM refuses them, and they need no rule
beyond the two fixtures' own: each group's chunk is its own block, and a flagged group keeps
its trailing chunk back while its request decodes and pops the lookup's extra chunk, each by
its own chunk. Each answered case is replayed in the mode its config line names and compared
as `test_offload_spec_more` compares its own (the tier's step lines and keys, request lines,
summary, KV events, drafts, spec stats); kvcli refused them all before.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import answer_of, config_of, replay_case
from spec_offload_check import check_spec_offload_case

from kvcore.errors import InputError

DATA = Path(__file__).parent / "data" / "offload_mixed_spec"
CASES = sorted(DATA.glob("*.trace.jsonl"))
RAN = [t for t in CASES if "error" not in answer_of(t)[-1]]
STOPPED = [t for t in CASES if t not in RAN]


def _name(t: Path) -> str:
    return t.name.split(".")[0]


@pytest.mark.parametrize("trace", RAN, ids=[_name(t) for t in RAN])
def test_case(trace: Path) -> None:
    check_spec_offload_case(trace)


def test_the_cases_cover_the_layouts() -> None:
    """Every method; both schedulers; two and three block sizes; flagged groups with CPU hits;
    a unit finer than every block (oxsu282: blocks of 16-64 hashed every 8 tokens, a flagged
    group of 32 keyed every 4th hash); each connector keyed every group by its own chunk."""
    seen = set()
    for t in RAN:
        cfg = config_of(t)
        summary = answer_of(t)[-1]["summary"]
        mixed = summary["config"]["_effective"]["mixed"]
        sizes = [g.get("block_size", cfg["block_size"]) for g in cfg["groups"]]
        unit = cfg.get("prefix_match_unit") or min(sizes)
        assert mixed["tokens_per_chunk"] == sizes
        assert mixed["hashes_per_chunk"] == [n // unit for n in sizes]
        assert summary["config"]["_effective"]["speculative"]["eagle_offload_groups"] == \
            cfg.get("eagle_groups", [])
        seen |= {cfg["spec_method"], f"sizes{len(set(sizes))}",
                 "async" if cfg.get("async_scheduling") else "sync"}
        if summary["offload"]["cpu_hit_tokens"]:
            seen |= {"hits"} | ({"flagged hits"} if cfg.get("eagle_groups") else set()) | (
                {"unit hits"} if "prefix_match_unit" in cfg else set())
    assert seen == {"ngram", "eagle", "eagle3", "mtp", "sizes2", "sizes3", "async", "sync",
                    "hits", "flagged hits", "unit hits"}, seen
    facts = answer_of(DATA / "oxsu282.trace.jsonl")[-1]["summary"]["config"]["_effective"]
    assert (facts["mixed"]["tokens_per_hash"], facts["mixed"]["hashes_per_chunk"],
            facts["speculative"]["eagle_offload_groups"]) == (8, [4, 2, 2, 8], [0])


def test_what_vllm_stops_on_stops_alike() -> None:
    """A chunk in tokens over several sizes (vLLM's AssertionError, in its words) and a sync
    load over a Mamba group the pool cannot hold (vLLM's ValueError): kvcli stops in one line
    at the same option."""
    assert [_name(t) for t in STOPPED] == ["oxs15", "oxsr73"]
    for t, field, said in ((STOPPED[0], "offload_block_size", "If 'block_size' is specified"),
                           (STOPPED[1], "sync_load_budget_bytes", "Cannot get 4 free blocks")):
        assert said in answer_of(t)[-1]["error"]
        with pytest.raises(InputError) as e:
            replay_case(t, async_scheduling=bool(config_of(t).get("async_scheduling")))
        assert e.value.field == f"config.{field}", e.value.field
        assert said in e.value.message
