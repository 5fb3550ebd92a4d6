"""Speculative decoding with the CPU tier, step for step against vLLM 0.33.

The recorded cases of `data/offload_spec/` (README there: the oracle's `sched_offload`, patched
for hybrid groups, given the spec oracles' speculative config, drafts and acceptance) replayed
with `--arrivals step` in the mode their config line names: the tier's step lines, request
lines, summary and event batches as `test_offload_replay` compares them, and on every step line
the drafts scheduled (`spec_scheduled`) with vLLM's SpecDecodingStats totals. ngram and eagle3
(the tier keeps vLLM's legacy hashes, so EAGLE drops a GPU hit's last block), one group or
hybrid ones, the draft's groups flagged (`eagle_groups`: the tier's EAGLE rules, `kvcore.
offload.eagle`) or not.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import answer_of, config_of, replay_case
from spec_offload_check import check_spec_offload_case

from kvcore.errors import InputError

DATA = Path(__file__).parent / "data" / "offload_spec"
CASES = sorted(DATA.glob("*.trace.jsonl"), key=lambda t: int(t.name[2:].split(".")[0]))
RAN = [t for t in CASES if "error" not in answer_of(t)[-1]]


@pytest.mark.parametrize("trace", RAN, ids=[t.name.split(".")[0] for t in RAN])
def test_spec_offload_case(trace: Path) -> None:
    check_spec_offload_case(trace)


def test_the_cases_cover_the_rules() -> None:
    """Both methods and modes, flagged groups with CPU hits (the lookup's pop), decode stores
    (offload_prompt_only off) in a flagged group, padded admissions and preemptions."""
    seen = set()
    hits_flagged = 0
    for t in RAN:
        cfg = config_of(t)
        summary = answer_of(t)[-1]["summary"]
        seen.add((cfg["spec_method"], bool(cfg.get("async_scheduling"))))
        if cfg.get("eagle_groups"):
            hits_flagged += summary["offload"]["cpu_hit_tokens"]
            seen.add("hybrid flagged" if len(cfg["groups"]) > 1 else "one flagged")
            if cfg.get("offload_prompt_only") is False:
                seen.add("decode stores flagged")
        if summary["totals"]["preemptions"]:
            seen.add("preempted")
    assert seen >= {("ngram", False), ("ngram", True), ("eagle3", False), ("eagle3", True),
                    "hybrid flagged", "one flagged", "decode stores flagged", "preempted"}
    assert hits_flagged > 0


def test_what_vllm_asserts_on_is_refused() -> None:
    """eagle + a flagged chunked local group: the tier keeps the legacy hashes, so EAGLE drops
    a hit's last block there, which vLLM asserts on at the first lookup."""
    refused = [t for t in CASES if t not in RAN]
    assert refused
    for t in refused:
        assert "chunked local" in answer_of(t)[-1]["error"]
        with pytest.raises(InputError) as e:
            replay_case(t, async_scheduling=bool(config_of(t).get("async_scheduling")))
        # (its config line: the tier, whose legacy hashes make the drop; no flag asked for it)
        assert e.value.field.startswith("config.kv_offloading_size"), e.value.field
        assert e.value.message.startswith("a CPU tier keeps vLLM's legacy block hashes")


def test_eagle_with_the_tier_keeps_the_legacy_hashes() -> None:
    """vLLM's KV connectors keep the legacy block hashes (config/vllm.py:686-688): with the tier
    an EAGLE replay's hashes are plain ones and a hit drops its last block."""
    from kvcore.engine.options import ReplayOptions
    from kvcore.engine.spec_decode import eagle_block_drop, hash_lookahead

    opts = ReplayOptions(num_speculative_tokens=2, spec_method="eagle3",
                         spec_acceptance_rate=0.5)
    assert hash_lookahead(opts) and not eagle_block_drop(opts)
    tier = ReplayOptions(num_speculative_tokens=2, spec_method="eagle3",
                         spec_acceptance_rate=0.5, kv_offloading_size_chunks=8)
    assert not hash_lookahead(tier) and eagle_block_drop(tier)

