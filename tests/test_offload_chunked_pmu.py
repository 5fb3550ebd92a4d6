"""The CPU tier beside a chunked local attention group with a `prefix_match_unit` finer than a
block = vLLM 0.33.0's Scheduler / AsyncScheduler and OffloadingConnector: the chunked group at
the lcm (partial hash hits off; Mamba groups or not), or at the unit beside Mamba groups with
partial hash hits on (`ocuN`), with drafts too (`osN`, `omN` for mtp); refused alike where
vLLM refuses or fails.

`data/offload_chunked_pmu/` holds ../offload_mixed's traces with a chunked group inserted and a
unit, answered by the oracle's `sched_offload` patched as ../offload_mixed_pmu/README.md says
(README there: 258 drawn, 163 ran and match, 95 stopped alike). kvcli refused these ("beside a
chunked local group kvcli does not model it with the CPU tier yet"); nothing new was needed.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import test_offload_replay as one_group
from oracle_sched import answer_of, config_of, replay_case
from spec_offload_check import check_spec_offload_case

from kvcore.errors import InputError
from kvcore.managers.registry import spec_from_group_config
from kvcore.prefix_match import partial_hash_hits, resolve_block_sizes, unmodelled

DATA = Path(__file__).parent / "data" / "offload_chunked_pmu"
CASES = sorted(DATA.glob("*.trace.jsonl"), key=lambda t: t.name)
RAN = [t for t in CASES if "error" not in answer_of(t)[-1]]
REFUSED = [t for t in CASES if t not in RAN]


def _specs(cfg: dict) -> list:
    return [spec_from_group_config(g, g.get("block_size", cfg["block_size"]))
            for g in cfg["groups"]]


def test_the_kept_cases_hold_both_layouts() -> None:
    on, lcm = [], 0
    for t in RAN:
        cfg = config_of(t)
        specs, unit = _specs(cfg), cfg["prefix_match_unit"]
        sizes = [s.block_size for s in specs]
        chunked = next(g["block_size"] for g in cfg["groups"] if g["type"] == "chunked_local")
        assert resolve_block_sizes(specs, unit, True)[1] == unit < max(sizes)
        assert unmodelled(specs, unit, True) is None
        if partial_hash_hits(specs, unit, True):
            assert chunked == unit
            on.append(t.name.split(".")[0])
        else:
            assert chunked == math.lcm(*sizes)
            lcm += 1
    assert on == ["ocu18", "ocu31", "ocu4", "ocu77", "ocu80", "omu91", "osu115", "osu5",
                  "osu87"]
    assert (len(RAN), lcm) == (30, 21)


@pytest.mark.parametrize("trace", RAN, ids=[t.name.split(".")[0] for t in RAN])
def test_chunked_pmu_tier_case(trace: Path) -> None:
    if config_of(trace).get("num_speculative_tokens"):
        # (and the drafts scheduled on every step, vLLM's SpecDecodingStats)
        check_spec_offload_case(trace)
        return
    one_group.test_offload_case(trace, "expected", bool(config_of(trace).get("async_scheduling")))


@pytest.mark.parametrize("trace", REFUSED, ids=[t.name.split(".")[0] for t in REFUSED])
def test_refused_as_vllm(trace: Path) -> None:
    """oc12: `offload_block_size` over several block sizes (vLLM's assertion at start-up); oc26:
    the pool; ocf1, ocf10: the chunked group finer than the lcm, vLLM's chunked manager's
    assertion at its first lookup (ocf10 after 8 idle steps before the first arrival); os1,
    om32: the tier's legacy hashes make EAGLE / MTP drop a block in the chunked group, the
    same manager's other assertion there."""
    error = answer_of(trace)[-1]["error"]
    with pytest.raises(InputError) as e:
        replay_case(trace, async_scheduling=bool(config_of(trace).get("async_scheduling")))
    if "kv_connector_extra_config" in error:
        assert e.value.field == "config.offload_block_size"
        assert "If 'block_size' is specified in kv_connector_extra_config" in e.value.message
    elif "would refuse to start" in error:
        assert "needs 66 blocks" in error and "needs 66 blocks" in e.value.message
    elif "eagle + chunked" in error:
        assert error == ("AssertionError: Hybrid KV cache is not supported for eagle + chunked "
                         "local attention.")
        assert e.value.field == "config.kv_offloading_size_chunks"
        assert error.split(": ", 1)[1] in e.value.message
    else:
        assert error == ("AssertionError: KV cache groups with different block sizes are not "
                         "compatible with chunked local attention now")
        assert "fail in vLLM at its first prefix-cache lookup" in e.value.message


def test_the_tier_hits_beside_partial_hits() -> None:
    """ocu77 (a chunked group at the unit 8 beside Mamba at 16, partial hits on): vLLM's
    requests take 208 tokens from the CPU tier."""
    summary = answer_of(DATA / "ocu77.trace.jsonl")[-1]["summary"]
    assert sum(r["cpu_hit_tokens"] for r in summary["requests"]) == 208
