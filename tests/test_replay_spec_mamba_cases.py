"""Engine mode with speculative decoding over Mamba groups (ngram, eagle3, mtp) = vLLM 0.33's
schedulers, step for step with their KV events: each Mamba group keeps K speculative state
blocks a request (vLLM's MambaSpec `num_speculative_blocks`, whatever the method), in "align"
mode (prefix caching on) and "none" mode (off); EAGLE's lookahead slots take no Mamba block;
an allocated request's speculative blocks a multi-block step leaves behind move to the table's
end; with EAGLE's legacy block drop the prefill checkpoints and the split's stops are a block
lower. The answers come from tests/data/sched_spec_mamba/oracle_spec_mamba.py (its README).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import check_spec_case, config_of

from kvcore.managers.mamba_checkpoint import checkpoint_position

DATA = Path(__file__).resolve().parent / "data" / "sched_spec_mamba"
CASES = sorted(DATA.glob("*.trace.jsonl"))


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_spec_mamba_case(trace: Path):
    got = check_spec_case(trace)
    assert got[0].config["enable_prefix_caching"] == config_of(trace)["enable_prefix_caching"]


def test_the_cases_are_all_there():
    assert [t.name.split(".")[0] for t in CASES] == [
        "sm11", "sm12", "sm19", "sm36", "sm39", "sm4", "sm42", "sm45", "sm72", "sm77",
        "smtp37", "smtp56"]


@pytest.mark.parametrize("tokens, grid, drop, want", [
    (44, 16, False, 32),    # the last boundary before the last token
    (48, 16, False, 32),    # (a whole-block prompt: its last token is recomputed)
    (44, 16, True, 16),     # EAGLE's drop: a block below the last whole one
    (48, 16, True, 32),
    (20, 16, True, 0),
])
def test_the_checkpoint_position(tokens, grid, drop, want):
    assert checkpoint_position(tokens, grid, drop) == want


@pytest.mark.parametrize("model, method, k, mamba_groups", [
    ("nemotron-nano-9b-v2", "ngram", 2, 7),
    ("qwen3-next-80b-a3b", "mtp", 3, 3),
])
def test_a_models_mamba_groups_keep_k_speculative_blocks(model, method, k, mamba_groups):
    """A replay sized from a model gives its Mamba specs K speculative state blocks, as a
    config line's groups get them (vLLM's MambaBase.get_kv_cache_spec, whatever the method):
    the sizing hears K, so the start-up's check has nothing to refuse."""
    from kvcore.engine.options import ReplayOptions
    from kvcore.engine.replay_pool import sized
    from kvcore.specs import MambaSpec
    from kvcore.traces.reader import read_trace

    cfg = ReplayOptions(model=model, num_blocks=4000, tp=2, num_speculative_tokens=k,
                        spec_method=method, spec_acceptance_rate=0.5)
    _, groups, _ = sized(cfg, read_trace(str(DATA / "sm4.trace.jsonl")))
    got = [g.kv_cache_spec.num_speculative_blocks for g in groups
           if isinstance(g.kv_cache_spec, MambaSpec)]
    assert got == [k] * mamba_groups

