"""The lookup memo (`kvcore.lookup_memo`) is exact: a refused waiting head's kept lookup is the
full lookup's answer at every call (the audit in `lookup_memo_audit.py` runs both and compares
the block objects), and a replay writes the same bytes with the memo and without it (step lines,
request lines, our events or vLLM's, the summary but its wall time): one group and hybrid
(sliding window, chunked local, Mamba), small pools (refused heads, preemptions, the heads' own
hits evicted as they wait), conversations whose next turn waits on blocks the turn before is
caching, cache salts and LoRA, sync and async, the CPU tier, priority scheduling."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest
from lookup_memo_audit import chain_trace, memo_on_off
from replay_bytes import SAMPLE, head, random_token_trace

from kvcore.engine.options import ReplayOptions
from kvcore.errors import InputError

# They patch the stack's classes: the pure-Python modules only.
pytestmark = pytest.mark.pure_python

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("asyn", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("events", ["jsonl", "vllm"])
@pytest.mark.parametrize("case", ["one-group", "gpt-oss", "gpt-oss-cpu-tier", "sample-priority"])
def test_refused_heads_change_no_byte(tmp_path, monkeypatch, case, events, asyn):
    """Pools small enough that heads wait for hundreds of steps, are preempted, and lose their
    hits to evictions: the memo keeps most lookups and drops its watch on those evictions."""
    n, extra = {
        "one-group": (60, {"num_blocks": 2500, "max_num_seqs": 16}),
        "gpt-oss": (60, {"model": "gpt-oss-20b", "num_blocks": 4000, "max_num_seqs": 32}),
        "gpt-oss-cpu-tier": (60, {"model": "gpt-oss-20b", "num_blocks": 4000,
                                  "max_num_seqs": 32, "kv_offloading_size": 0.5}),
        "sample-priority": (0, {"num_blocks": 700, "policy": "priority"}),
    }[case]
    trace = head(tmp_path, n) if n else str(SAMPLE)
    opts = ReplayOptions(async_scheduling=asyn, skip_bad=True, **extra,
                         given=frozenset({"num_blocks", *extra}))
    seen = memo_on_off(trace, opts, events, monkeypatch)
    assert seen["kept"] > 0.5 * seen["lookups"], seen
    if not (asyn and case.startswith("gpt-oss")):  # (there the heads' hits stay held)
        assert seen["get_new_blocks"] > 0, seen


def test_chained_conversations(tmp_path, monkeypatch):
    """Each turn waits while the turn before caches the blocks its prompt repeats: the hits
    grow during the wait, and every answer is the full lookup's. Random pools, groups (one,
    sliding window, chunked local beside full attention), policies, sync and async."""
    total: Counter = Counter()
    refused = 0
    for seed in range(10):
        rng = random.Random(500 + seed)
        bs = rng.choice([4, 8])
        cfg = {"block_size": bs, "num_blocks": rng.choice([40, 70, 120]),
               "max_num_seqs": rng.choice([2, 4, 16]),
               "max_num_batched_tokens": rng.choice([32, 128]),
               "policy": rng.choice(["fcfs", "priority"])}
        kind = seed % 3
        if kind:
            cfg["groups"] = [{"type": "full"},
                             {"type": "sliding_window", "sliding_window": bs * 2 + 1}
                             if kind == 1 else
                             {"type": "chunked_local", "attention_chunk_size": bs * 2}]
        trace = chain_trace(tmp_path / f"c{seed}.jsonl", rng, cfg)
        for asyn in (False, True):
            opts = ReplayOptions(async_scheduling=asyn, arrivals="step", skip_bad=True,
                                 given=frozenset({"async_scheduling"}))
            try:
                total += memo_on_off(trace, opts, "jsonl", monkeypatch)
            except InputError:
                refused += 1
    assert refused < 4
    assert total["kept"] > 0.3 * total["lookups"], total
    assert total["get_new_blocks"] > 0 and total["cache_full_blocks"] > 0, total


def test_random_token_traces(tmp_path, monkeypatch):
    """Random token-id traces (shared prefixes, staggered steps) with small pools and budgets,
    one group or hybrid groups: the same bytes both ways, sync and async."""
    total: Counter = Counter()
    refused = 0
    for seed in range(8):
        rng = random.Random(700 + seed)
        bs = rng.choice([2, 4, 8])
        cfg = {"block_size": bs, "num_blocks": rng.choice([30, 60, 200]),
               "max_num_seqs": rng.choice([2, 8]),
               "max_num_batched_tokens": rng.choice([16, 64, 512])}
        if seed % 2:
            cfg["groups"] = [{"type": "sliding_window", "sliding_window": bs + 1},
                             {"type": "full"}]
        trace = random_token_trace(tmp_path / f"r{seed}.jsonl", rng, cfg)
        for asyn in (False, True):
            opts = ReplayOptions(async_scheduling=asyn, arrivals="step", skip_bad=True,
                                 given=frozenset({"async_scheduling"}))
            try:
                total += memo_on_off(trace, opts, "vllm", monkeypatch)
            except InputError:
                refused += 1
    assert refused < 4
    assert total["kept"] > 0, total


# The recorded vLLM cases with several groups (sliding window, chunked local, Mamba, CPU tiers
# over them), LoRA cases and one-group cases under pressure.
RECORDED = sorted(t for d in ("sched_cases_hybrid", "sched_fresh_hybrid", "offload_hybrid",
                              "sched_mamba", "offload_mamba", "sched_fresh_lora",
                              "offload_lora", "sched_stress")
                  for t in (DATA / d).glob("*.trace.jsonl"))


@pytest.mark.parametrize("asyn", [False, True], ids=["sync", "async"])
def test_recorded_cases(monkeypatch, asyn):
    """The memo on every recorded case it applies to: the same bytes, every answer exact."""
    assert len(RECORDED) >= 60
    total: Counter = Counter()
    refused = 0
    for trace in RECORDED:
        if json.loads(trace.open().readline())["config"].get("prefix_match_unit"):
            continue    # (partial hash hits: no memo)
        opts = ReplayOptions(arrivals="step", async_scheduling=asyn, skip_bad=True,
                             given=frozenset({"arrivals", "async_scheduling"}))
        try:
            total += memo_on_off(str(trace), opts, "vllm", monkeypatch)
        except InputError:
            refused += 1
    assert refused < 8
    assert total["kept"] > 0, total
