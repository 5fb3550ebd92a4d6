"""One speculative CPU-tier case against vLLM's answer, for the test modules that replay such
cases (not a test module: a test function imported by name is collected, and its parametrized
cases run, once more in every module that imports it).

`check_spec_offload_case` replays a recorded case in the mode its config line names and
compares what `test_offload_replay` compares (the tier's step lines and keys, request lines,
summary, event batches), then the drafts scheduled on every step line (`spec_scheduled`) and
vLLM's SpecDecodingStats totals.
"""

from __future__ import annotations

from pathlib import Path

import test_offload_replay as one_group  # (a module: its tests are not collected here again)
from oracle_sched import answer_of, config_of, replay_case


def check_spec_offload_case(trace: Path) -> None:
    asyn = bool(config_of(trace).get("async_scheduling"))
    one_group.test_offload_case(trace, "expected", asyn)
    s, ours, _, _ = replay_case(trace, async_scheduling=asyn)
    expected = answer_of(trace)
    lines = [e for e in expected[:-1] if not e.get("idle")]
    assert [e.get("drafts", {}) for e in ours] == [e.get("spec_scheduled", {}) for e in lines]
    spec = expected[-1]["summary"]["spec"]
    assert (s.spec_decode["num_drafts"], s.spec_decode["num_draft_tokens"],
            s.spec_decode["num_accepted_tokens"]) == \
        (spec["num_drafts"], spec["num_draft_tokens"], spec["num_accepted_tokens"])
