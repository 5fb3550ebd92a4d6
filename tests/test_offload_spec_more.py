"""The CPU tier with method mtp, and with drafts over Mamba groups, step for step against vLLM.

`data/offload_spec_more/` (README there): ../offload_spec's oracle patched for MTP over a tiny
DeepSeek-V3 target and for Mamba groups with K speculative state blocks. Each answered case is
replayed and compared as `test_offload_spec_cases` compares its own (the tier's step lines and
keys, request lines, summary, KV events, drafts, spec stats). Single-module MTP is EAGLE-3 to
vLLM's scheduler and connector; over Mamba groups the connector's legacy hashes make EAGLE's
block drop, which moves the aligned split's stops and the Mamba2 checkpoint a block lower, and
the checkpoint's re-keyed block is what the tier is offered.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import answer_of, config_of, replay_case
from spec_offload_check import check_spec_offload_case

from kvcore.errors import InputError

DATA = Path(__file__).parent / "data" / "offload_spec_more"
CASES = sorted(DATA.glob("*.trace.jsonl"))
RAN = [t for t in CASES if "error" not in answer_of(t)[-1]]
# a prefix_match_unit finer than the block over Mamba groups: partial tails with drafts
UNIT = [t for t in RAN if "prefix_match_unit" in config_of(t)]


def _mamba(t: Path) -> bool:
    return any(g["type"] == "mamba" for g in config_of(t).get("groups", ()))


@pytest.mark.parametrize("trace", RAN, ids=[t.name.split(".")[0] for t in RAN])
def test_case(trace: Path) -> None:
    check_spec_offload_case(trace)


def test_the_cases_cover_the_rules() -> None:
    """mtp over one flagged group and hybrid ones; ngram, eagle3 and mtp over Mamba groups
    with CPU hits; both modes; the drop's split (a 33-token prompt admitted 24 tokens, not 32)
    and a Mamba2 checkpoint re-keyed a block lower and offered to the tier there (chunk 2 of a
    34-token prompt)."""
    hits, modes = set(), set()
    for t in RAN:
        cfg = config_of(t)
        modes.add((cfg["spec_method"], bool(cfg.get("async_scheduling"))))
        if answer_of(t)[-1]["summary"]["offload"]["cpu_hit_tokens"]:
            hits.add((cfg["spec_method"], _mamba(t)))
    assert hits >= {("mtp", False), ("ngram", True), ("eagle3", True), ("mtp", True)}, hits
    assert modes >= {("mtp", False), ("mtp", True)}, modes
    first = next(ln for ln in answer_of(DATA / "mmt6.trace.jsonl") if ln.get("scheduled"))
    assert first["scheduled"] == {"m6r0": 24}
    first = next(ln for ln in answer_of(DATA / "mmt28.trace.jsonl") if ln.get("scheduled"))
    assert first["scheduled"] == {"m28r0": 34}
    assert first["store_offers"]["m28r0"][0] == {"chunks": {"0": [2]}, "n_absent": 1}

def test_mtp_is_eagle3_to_the_tier() -> None:
    """The same trace with mtp (here) and eagle3 (../offload_spec) gets the same step lines
    from vLLM: the connector and the config never test for mtp."""
    mtp = answer_of(DATA / "mtp16.trace.jsonl")
    eagle3 = answer_of(DATA.parent / "offload_spec" / "os16.trace.jsonl")
    assert config_of(DATA / "mtp16.trace.jsonl")["spec_method"] == "mtp"
    assert mtp[:-1] == eagle3[:-1]
    assert mtp[-1]["summary"]["config"]["_effective"]["speculative"]["num_prefill_lookahead_" \
                                                                       "tokens"] == 1


def test_what_vllm_asserts_on_is_refused() -> None:
    """mtp over a chunked local group: the tier's legacy hashes make EAGLE's drop there."""
    t = DATA / "mtp70.trace.jsonl"
    assert "chunked local" in answer_of(t)[-1]["error"]
    with pytest.raises(InputError) as e:
        replay_case(t, async_scheduling=bool(config_of(t).get("async_scheduling")))
    assert e.value.field.startswith("config.kv_offloading_size"), e.value.field
    assert e.value.message.startswith("a CPU tier keeps vLLM's legacy block hashes")


def test_partial_tails_with_drafts() -> None:
    """With a unit, EAGLE's proof margin keys a flagged group's tail one unit past the
    boundary (mm268: boundary 272, 't288'), a tail is stored only for a request that loaded
    from the tier (mmt80 step 6: p80r2 and p80r3 offer no tail), and an async load's
    reservation counts an align-mode Mamba group without the drafts' slots (mm116 step 34:
    p116r9 admitted, 4 blocks left)."""
    assert {t.name.split(".")[0] for t in UNIT} == {"mm116", "mm268", "mmt368", "mmt80"}

    def step(case: str, n: int) -> dict:
        return next(ln for ln in answer_of(DATA / f"{case}.trace.jsonl") if ln["step"] == n)

    assert step("mm268", 16)["store_offers"]["p268r5"][1]["chunks"] == {"0": ["t272"],
                                                                        "1": ["t288"]}
    assert step("mmt80", 6)["store_offers"] == {"p80r2": [{"chunks": {"0": [1]}, "n_absent": 1}],
                                                "p80r3": [{"chunks": {"0": [2]}, "n_absent": 1}]}
    s = step("mm116", 34)
    assert (s["lookups"]["p116r9"], s["num_free_blocks"]) == ([0, 32], 4)
