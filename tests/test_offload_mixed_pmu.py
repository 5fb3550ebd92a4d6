"""The CPU tier with a `prefix_match_unit` beside Mamba and sliding-window groups (of several
block sizes) against vLLM 0.33: partial hash hits off (a window not at the unit) and on (every
window's block the unit), sync and async, retention and decode stores; and over full attention
and sliding windows without a Mamba group (`oxunN`).

`data/offload_mixed_pmu/` holds ../offload_mixed's traces with a unit and the answers of vLLM's
real Scheduler + OffloadingConnector (the oracle's `sched_offload` patched as
../offload_mixed_spec's README says, and by `patch_oracle_mixed_pmu.py` there for `oxunN`;
README there: 411 drawn, 306 ran, all alike). kvcli
refused the unit with the tier here until then ("kvcli does not model it with the CPU tier
yet"); what the tier needs is what it had: each group's keys every (its block / the unit)-th
hash, and over full attention and Mamba the partial tails (`kvcore/offload/hybrid_partial.py`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import test_offload_replay as one_group
from oracle_sched import answer_of, config_of
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.managers.registry import spec_from_group_config
from kvcore.prefix_match import partial_hash_hits, resolve_block_sizes, unmodelled

DATA = Path(__file__).parent / "data" / "offload_mixed_pmu"
CASES = sorted(DATA.glob("*.trace.jsonl"), key=lambda t: t.name)
RAN = [t for t in CASES if "error" not in answer_of(t)[-1]]


def _specs(cfg: dict) -> list:
    return [spec_from_group_config(g, g.get("block_size", cfg["block_size"]))
            for g in cfg["groups"]]


def test_the_kept_cases_hold_both_layouts() -> None:
    on = []
    for t in CASES:
        cfg = config_of(t)
        specs, unit = _specs(cfg), cfg["prefix_match_unit"]
        types = {g["type"] for g in cfg["groups"]}
        if t.name.startswith("oxun"):
            assert "mamba" not in types
        else:
            assert types >= {"mamba", "sliding_window"}
        assert resolve_block_sizes(specs, unit, True)[1] == unit
        assert unmodelled(specs, unit, True) is None
        if partial_hash_hits(specs, unit, True):
            on.append(t.name.split(".")[0])
    assert on == ["oxuw141", "oxuw163", "oxuw201", "oxuw214", "oxuw31", "oxuw322", "oxuw92"]
    assert len(RAN) == 23


@pytest.mark.parametrize("trace", RAN, ids=[t.name.split(".")[0] for t in RAN])
def test_mixed_pmu_tier_case(trace: Path) -> None:
    one_group.test_offload_case(trace, "expected", bool(config_of(trace).get("async_scheduling")))


def test_a_sync_load_over_a_mamba_group_fails_as_vllm() -> None:
    """oxud49 (async): vLLM's "Cannot get 1 free blocks from the pool" in get_new_blocks, mid-run;
    kvcli refuses the run in one line naming the budget."""
    trace = DATA / "oxud49.trace.jsonl"
    assert answer_of(trace)[-1] == {"error": "ValueError: Cannot get 1 free blocks from the pool"}
    r = CliRunner().invoke(app, ["replay", str(trace), "--arrivals", "step"])
    assert (r.exit_code, r.stdout) == (2, "")
    error = [x for x in r.stderr.splitlines() if x.startswith("error:")]
    assert len(error) == 1 and error[0].startswith(
        f"error: {trace}:1: field 'config.sync_load_budget_bytes': request x49r12: a sync load "
        "over a Mamba group needs more GPU blocks than are free")


def test_a_hit_lands_inside_a_block_through_the_tier() -> None:
    """oxuw163 (Mamba2 at 16 beside a window at the unit 4 and full attention at 32): vLLM's
    requests hit 1,632 tokens in all, some inside a 16-token block."""
    summary = answer_of(DATA / "oxuw163.trace.jsonl")[-1]["summary"]
    hits = [r["num_cached_tokens"] for r in summary["requests"]]
    assert sum(hits) == 1632 and any(h % 16 for h in hits)
