"""The decode fast-forward (`kvcore.engine.fast_forward`) is exact: with it and without it a
synchronous replay writes the same bytes (step lines, request lines, our event stream, vLLM's
event batches, the summary but its wall time), and it does run (fewer plain steps)."""

from __future__ import annotations

import random

import pytest
from replay_bytes import SAMPLE, head, random_token_trace, replay_bytes

from kvcore.engine.engine_loop import EngineLoop
from kvcore.engine.replay import ReplayOptions

# They patch the stack's classes (or record their calls): the pure-Python modules only.
pytestmark = pytest.mark.pure_python


def outputs(trace: str, opts: ReplayOptions, events: str, fast: bool, monkeypatch) -> tuple:
    """Every output, and how many plain steps ran."""
    return replay_bytes(trace, opts, events, monkeypatch, counting=(EngineLoop, "step"),
                        fast_forward=fast)


@pytest.mark.parametrize("events", ["jsonl", "vllm"])
@pytest.mark.parametrize("case", ["sample-timestamps", "sample-small-pool", "conversation-step",
                                  "conversation-priority", "sample-max-model-len"])
def test_fast_forward_changes_no_byte(tmp_path, monkeypatch, case, events):
    base = {"async_scheduling": False, "block_size": 16}
    trace, extra = {
        "sample-timestamps": (str(SAMPLE), {"num_blocks": 4096}),
        "sample-small-pool": (str(SAMPLE), {"num_blocks": 1200}),      # preemptions
        "conversation-step": (head(tmp_path, 200), {"num_blocks": 30000, "arrivals": "ignore",
                                                    "max_num_seqs": 64}),
        "conversation-priority": (head(tmp_path, 150), {"num_blocks": 9000, "policy": "priority",
                                                        "watermark": 0.01}),
        "sample-max-model-len": (str(SAMPLE), {"num_blocks": 4096, "max_model_len": 4100,
                                               "skip_bad": True}),
    }[case]
    opts = ReplayOptions(**base, **extra)
    fast, n_fast = outputs(trace, opts, events, True, monkeypatch)
    slow, n_slow = outputs(trace, opts, events, False, monkeypatch)
    assert fast[3] == slow[3]
    assert fast[0] == slow[0] and fast[1] == slow[1] and fast[2] == slow[2]
    assert n_fast < 0.6 * n_slow, (n_fast, n_slow)     # it ran, over much of the run


def test_fast_forward_on_random_token_traces(tmp_path, monkeypatch):
    """Random token-id traces with shared prefixes, staggered steps, small pools, odd block
    sizes: the same bytes both ways."""
    for seed in range(6):
        rng = random.Random(seed)
        bs = rng.choice([1, 3, 8, 16])
        cfg = {"block_size": bs, "num_blocks": rng.choice([60, 200, 2000]),
               "max_num_seqs": rng.choice([2, 8, 32]),
               "max_num_batched_tokens": rng.choice([16, 64, 512])}
        # vLLM refuses a budget below max_num_seqs at start-up (kvcore.engine.sched_limits)
        cfg["max_num_seqs"] = min(cfg["max_num_seqs"], cfg["max_num_batched_tokens"])
        trace = random_token_trace(tmp_path / f"t{seed}.jsonl", rng, cfg)
        opts = ReplayOptions(async_scheduling=False, arrivals="step", skip_bad=True)
        fast, _ = outputs(trace, opts, "vllm", True, monkeypatch)
        slow, _ = outputs(trace, opts, "vllm", False, monkeypatch)
        assert fast == slow, seed
