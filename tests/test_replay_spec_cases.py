"""Engine mode with speculative decoding (method ngram) = vLLM 0.33's schedulers with an n-gram
`SpeculativeConfig`, step for step (docs/replay-engine.md, "Speculative decoding").

The answers in tests/data/sched_spec/ come from `oracle_spec.py` there: vLLM's own Scheduler
(with `EngineCore.post_step`'s draft delivery) or AsyncScheduler (placeholder drafts), whose fake
model accepts drafts by kvcli's own rule (`kvcore.engine.spec_accept`) and rejects the drafts
padded onto a one-token admission, as vLLM's V2 runner does. Every step line must be ours field
for field with the drafts each step verified, every request's hit, preemptions, first and finish
steps, the prefix-cache stats, vLLM's SpecDecodingStats and, with `kv_events`, its event batches.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import answer_of, check_spec_case, replay_recorded

from kvcore.errors import InputError

DATA = Path(__file__).resolve().parent / "data" / "sched_spec"
CASES = sorted(DATA.glob("*.trace.jsonl"))


@pytest.mark.parametrize("trace", [t for t in CASES if "error" not in answer_of(t)[-1]],
                         ids=lambda p: p.name[:-12])
def test_spec_case(trace: Path):
    check_spec_case(trace)


def test_where_vllm_fails_its_assertion_the_replay_stops_saying_why():
    """threshold_cuts_padding: the threshold 2 cuts a padded admission of 1 + 3 tokens."""
    trace = DATA / "threshold_cuts_padding.trace.jsonl"
    assert answer_of(trace)[-1] == {"error": "AssertionError: "}
    with pytest.raises(InputError) as err:
        replay_recorded(trace)
    # (the trace's config line set it: named there, line 1)
    assert (err.value.field, err.value.line) == ("config.long_prefill_token_threshold", 1)
    assert err.value.message.startswith("2 cuts the one-token admission of request 'b', "
                                        "padded to 1 + 3 tokens for speculative decoding")


def test_the_cases_are_all_there():
    names = [t.name.split(".")[0] for t in CASES]
    assert names == ["aseed90108", "aseed90112", "cases_async_b_preemption", "cases_d_priority",
                     "haseed90112", "hseed90100", "hseed90103", "kaseed90104", "kseed90110",
                     "seed90100", "seed90102", "seed90112", "seed90114",
                     "threshold_cuts_padding"]
