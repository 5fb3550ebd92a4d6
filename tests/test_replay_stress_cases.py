"""Adversarial scheduler cases = vLLM 0.33.0's Scheduler (tests/data/sched_stress/README.md).

Blocks of 2 and 32 tokens, one running sequence, long-prefill thresholds of 1 token, identical
prompts together, prompts cut at block edges: replayed with `--arrivals step` in the mode the
case names, every step line, every request's hit / preemptions / first and last step, the
prefix-cache stats and (with KV events) the vLLM event batches must be the oracle's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import answer_of, assert_matches, config_of, replay_case

STRESS = Path(__file__).resolve().parent / "data" / "sched_stress"
CASES = sorted(STRESS.glob("*.trace.jsonl"))


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_stress_case(trace: Path):
    cfg = config_of(trace)
    asyn = cfg.get("async_scheduling", False)
    assert_matches(answer_of(trace), replay_case(trace, async_scheduling=asyn), asyn=asyn,
                   kv_events=cfg.get("kv_events", False))


def test_the_stress_cases_are_all_there():
    assert [t.name.split(".")[0] for t in CASES] == [
        "xaseed3104", "xhaseed3304", "xhaseed7272", "xhseed3204", "xhseed3210", "xhseed5310",
        "xseed3014", "xseed3024", "xseed7202"]
    for t in CASES:
        assert t.with_name(t.name.replace(".trace.", ".expected.")).exists()
    # the edges they were picked for: blocks of 2, one running sequence, a 1-token threshold
    cfgs = {t.name.split(".")[0]: config_of(t) for t in CASES}
    assert cfgs["xseed3014"]["block_size"] == 2
    assert cfgs["xhseed3210"]["max_num_seqs"] == 1
    assert cfgs["xaseed3104"]["long_prefill_token_threshold"] == 1
