"""The CPU tier over Mamba groups, step for step against vLLM 0.33.

`data/offload_mamba/` holds traces over align-mode Mamba groups (Jamba's and Mamba2's, with and
without a full-attention group) and the answers of vLLM's real Scheduler + OffloadingConnector
(a patched copy of the oracle's `sched_offload`; README there). Each is replayed in the
scheduling mode its config line names and compared as `test_offload_hybrid` compares its cases:
the step lines (the per-state store offers and one-block jobs included), the request lines, the
summary's `offload` object and the event batches.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import test_offload_replay as one_group
from oracle_sched import answer_of, config_of, replay_case

from kvcore.errors import InputError

DATA = Path(__file__).parent / "data" / "offload_mamba"
CASES = sorted(DATA.glob("*.trace.jsonl"), key=lambda t: int(t.name[2:].split(".")[0]))


@pytest.mark.parametrize("trace", CASES, ids=[t.name.split(".")[0] for t in CASES])
def test_mamba_case(trace: Path) -> None:
    one_group.test_offload_case(trace, "expected", bool(config_of(trace).get("async_scheduling")))


@pytest.mark.parametrize("trace", CASES, ids=[t.name.split(".")[0] for t in CASES])
def test_answer_is_well_formed(trace: Path) -> None:
    """vLLM loaded Mamba states from the CPU tier: a load job holds one block of each Mamba
    group (its state at the hit boundary) and the attention chunks before it."""
    cfg = config_of(trace)
    lines = answer_of(trace)
    summary = lines[-1]["summary"]
    off = summary["offload"]
    assert off["cpu_hit_tokens"] > 0 and off["load_jobs"] > 0 and off["store_jobs"] > 0
    mamba = [i for i, g in enumerate(cfg["groups"]) if g["type"] == "mamba"]
    facts = summary["config"]["_effective"]["mamba"]
    assert facts["offloaded_groups"] == list(range(len(cfg["groups"])))
    assert [facts["window_chunks"][i] for i in mamba] == [1] * len(mamba)
    tpc = summary["config"]["_effective"]["tokens_per_chunk"]
    assert facts["mamba_align_size"] == tpc
    steps = [ln for ln in lines[:-1] if "step" in ln]
    loads = [j for ln in steps for j in ln["load_jobs"].values()]
    assert loads and all(j["group_sizes"][i] == 1 for j in loads for i in mamba)
    stored = {k[0] for ln in steps for j in ln["store_jobs"].values() for k in j["keys"]}
    assert set(mamba) <= stored
    for r in summary["requests"]:
        assert r["cpu_hit_tokens"] % tpc == 0


def test_the_cases_cover_the_layouts() -> None:
    kinds, modes = set(), set()
    for t in CASES:
        cfg = config_of(t)
        kinds.add(tuple(sorted({(g["type"], bool(g.get("checkpoint"))) for g in cfg["groups"]})))
        modes.add(bool(cfg.get("async_scheduling")))
    assert {(("full", False), ("mamba", False)), (("full", False), ("mamba", True)),
            (("mamba", False),)} <= kinds
    assert modes == {False, True}
    # a sync load whose step caches past the loaded state offers that state again (om126)
    assert any(j.get("sync") and any(o["n_absent"] == 0 for o in ln["store_offers"].get(j["req"], ()))
               for t in CASES for ln in answer_of(t)[:-1] if "step" in ln
               for j in ln["load_jobs"].values())


def test_a_retention_off_the_chunk_is_refused() -> None:
    """vLLM counts a Mamba group as windowed and refuses at start-up a retention interval that
    is not a multiple of the chunk (offloading/scheduler.py:301-310): om26's chunk is 16
    tokens (block 8), so 8 is refused."""
    trace = DATA / "om26.trace.jsonl"
    with pytest.raises(InputError) as e:
        replay_case(trace, async_scheduling=False, prefix_cache_retention_interval=8,
                    given=frozenset({"arrivals", "async_scheduling",
                                     "prefix_cache_retention_interval"}))
    assert e.value.field == "prefix_cache_retention_interval"
    assert "\n" not in str(e.value)


def test_a_sync_load_past_the_pool_stops_in_one_line() -> None:
    """vLLM 0.33 raises `Cannot get 1 free blocks from the pool` on om102 (README): a sync
    load's Mamba state block is not in the allocation's count. We stop there in one line naming
    the option, on the trace's config line that set it; with every load asynchronous the run
    goes through."""
    trace = DATA / "om102.fails.jsonl"
    with pytest.raises(InputError) as e:
        replay_case(trace, async_scheduling=False)
    assert (e.value.field, e.value.line) == ("config.sync_load_budget_bytes", 1)
    assert "vLLM 0.33 fails here too" in str(e.value) and "\n" not in str(e.value)
    s = replay_case(trace, async_scheduling=False, sync_load_budget_bytes=0,
                    given=frozenset({"arrivals", "async_scheduling", "sync_load_budget_bytes"}))[0]
    assert s.offload["cpu_hit_tokens"] > 0
