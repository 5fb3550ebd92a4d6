"""The one-pass LRU curve equals exact per-capacity replays, at 20 capacities spread over it.

Exact means: under `--rule vllm`, the real cache-mode replay (`kvcore.engine.replay`, the
KVCacheManager) on generated traces, and the `lru` simulation on the conversation trace (the
simulation is shown equal to the KVCacheManager replay in test_policies.py; 20 real replays of
the 12,031-request trace would take ~12 minutes); under `--rule trace`, the `lru` simulation.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from test_curve_gen import CONVERSATION, make_trace

from kvcore.analysis.curve.exact import Task, run_tasks
from kvcore.analysis.curve.input import build_input
from kvcore.analysis.curve.onepass import one_pass, stack_distances
from kvcore.analysis.curve.sim import simulate
from kvcore.engine.replay import ReplayOptions, replay
from kvcore.traces import read_trace


def spread(lo: int, hi: int, n: int = 20) -> list[int]:
    """`n` distinct capacities over [lo, hi], geometric, ends included."""
    caps = sorted({round(lo * (hi / lo) ** (i / (n - 1))) for i in range(n)})
    k = lo
    while len(caps) < n:          # small ranges: fill with the next integers
        if k not in caps:
            caps.append(k)
        k += 1
    return sorted(caps)[:n]


def kvm_replay(trace, bs: int, capacity: int, warmup: float = 0.0):
    return replay(trace.path, ReplayOptions(mode="cache", block_size=bs,
                                            num_blocks=capacity + 1, warmup=warmup), trace=trace)


def test_stack_distances_by_hand():
    """Three requests: A=[a,b], B=[a,c], C=[a,b]: distances against the state before each."""
    class R:
        def __init__(self, ids):
            self.prompt_len, self.hash_ids, self.trace_block_size = 2 * 4, ids, 4
            self.prompt_token_ids = None

    inp = build_input([R([1, 2]), R([1, 3]), R([1, 2])], rule="trace", block_size=4)
    # After A the stack (top first) is a, b; after B it is a, c, b.
    # C looks up a (distance 0) and b (distance 2: a and c were touched since).
    assert stack_distances(inp).tolist() == [-1, -1, 0, -1, 0, 2]
    op = one_pass(inp)
    assert [op.hit_tokens(c) for c in (1, 2, 3)] == [8, 8, 12]
    # Ceiling 12 tokens: 50% (6) is reached with 1 block, 90% (10.8) only with 3.
    assert (op.ceiling_tokens, op.ceiling_capacity, op.knee(0.5), op.knee(0.9)) == (12, 3, 1, 3)


@pytest.mark.parametrize("seed", [3, 11])
@pytest.mark.parametrize("bs", [16, 8])
def test_vllm_one_pass_equals_kvcache_manager_replay(tmp_path, seed, bs):
    """No aligned repeats: the one pass is exact from the largest request up, at any size."""
    trace = read_trace(str(make_trace(tmp_path / "t.jsonl", seed=seed, aligned_repeats=False)))
    inp = build_input(trace.requests, rule="vllm", block_size=bs)
    op = one_pass(inp)
    assert op.exact_max == math.inf and op.exact_min == int(inp.num_blocks.max())
    caps = spread(op.exact_min, op.ceiling_capacity + 2)
    assert len(caps) == 20
    rates = []
    for c in caps:
        s = kvm_replay(trace, bs, c)
        assert s.rejected == 0
        assert (op.hit_tokens(c), op.total_tokens) == (s.hit_tokens, s.prompt_tokens), c
        rates.append(s.hit_rate)
    assert rates[0] < rates[-1] == pytest.approx(op.hit_rate(math.inf))


def test_vllm_aligned_repeats_bound_the_exact_range(tmp_path):
    """A block-aligned repeat caches a duplicate block while its key is still cached: the one
    pass says from which capacity that happens, is exact below it, and wrong somewhere above
    (which is why the curve replays there)."""
    base = make_trace(tmp_path / "base.jsonl", seed=5, aligned_repeats=False).read_text()
    lines = base.splitlines()
    aligned = json.dumps({"timestamp": 0, "input_length": 5 * 16, "output_length": 4,
                          "hash_ids": [10**6 + i for i in range(5)], "block_size": 16})
    path = tmp_path / "t.jsonl"
    objs = [json.loads(x) for x in lines[:150] + [aligned] + lines[150:] + [aligned] + lines]
    for t, o in enumerate(objs):
        o["timestamp"] = t             # replay order is arrival order
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))
    trace = read_trace(str(path))
    inp = build_input(trace.requests, rule="vllm", block_size=16)
    op = one_pass(inp)
    assert op.exact_min < op.exact_max < math.inf
    for c in spread(op.exact_min, int(op.exact_max)):
        assert op.hit_tokens(c) == kvm_replay(trace, 16, c).hit_tokens, c
    above = [c for c in range(int(op.exact_max) + 1, op.ceiling_capacity + 40)
             if op.hit_tokens(c) != simulate(inp, "lru", c).hit_tokens]
    assert above
    assert op.hit_tokens(above[0]) != kvm_replay(trace, 16, above[0]).hit_tokens


@pytest.mark.parametrize("warmup", [0.0, 0.3])
def test_trace_rule_one_pass_equals_lru_simulation(tmp_path, warmup):
    trace = read_trace(str(make_trace(tmp_path / "t.jsonl", seed=7)))
    inp = build_input(trace.requests, rule="trace", block_size=16, warmup=warmup)
    op = one_pass(inp)
    assert (op.exact_min, op.exact_max) == (1, math.inf)
    for c in spread(1, op.ceiling_capacity + 2):
        r = simulate(inp, "lru", c)
        assert (op.hit_tokens(c), op.total_tokens) == (r.hit_tokens, r.prompt_tokens), c


@pytest.mark.slow
@pytest.mark.parametrize("rule,warmup", [("trace", 0.5), ("vllm", 0.0)])
def test_conversation_trace_one_pass_equals_exact(rule, warmup):
    trace = read_trace(str(CONVERSATION))
    inp = build_input(trace.requests, rule=rule, block_size=512, warmup=warmup)
    op = one_pass(inp)
    caps = spread(max(op.exact_min, 2), op.ceiling_capacity + 1)
    assert len(caps) == 20 and all(op.is_exact(c) for c in caps)
    exact = run_tasks([Task("simulation", "lru", c) for c in caps], inp, trace, warmup, jobs=2)
    got = {r.task.capacity: (r.hit_tokens, r.prompt_tokens) for r in exact}
    assert got == {c: (op.hit_tokens(c), op.total_tokens) for c in caps}
    rates = [op.hit_rate(c) for c in caps]
    assert np.all(np.diff(rates) >= 0) and rates[0] < 0.06 and rates[-1] > 0.36


def test_token_id_trace_with_cache_salt(tmp_path):
    """Token-id traces take the general keying path (chained block contents); a cache salt
    makes equal prompts different content, as vLLM hashes it into the first block."""
    import random

    rng = random.Random(3)
    system = list(range(1000, 1040))
    lines = []
    for i in range(120):
        prompt = system + [rng.randrange(50) for _ in range(rng.randint(1, 30))]
        obj = {"prompt_token_ids": prompt, "output_length": 2, "timestamp": i}
        if i % 3 == 0:
            obj["cache_salt"] = "tenant-b"
        lines.append(json.dumps(obj))
    path = tmp_path / "tok.jsonl"
    path.write_text("\n".join(lines) + "\n")
    trace = read_trace(str(path))
    inp = build_input(trace.requests, rule="vllm", block_size=8)
    op = one_pass(inp)
    top = int(min(op.exact_max, op.ceiling_capacity + 2))
    for c in spread(op.exact_min, top, 8):
        assert op.hit_tokens(c) == kvm_replay(trace, 8, c).hit_tokens, c
    # Without the salt the salted third would share the system prompt with everyone.
    unsalted = build_input([dataclasses.replace(r, cache_salt=None) for r in trace.requests],
                           rule="vllm", block_size=8)
    assert one_pass(unsalted).ceiling_tokens > op.ceiling_tokens


@pytest.mark.parametrize("jobs", [1, 2])
def test_exact_points_report_progress_in_requests(tmp_path, jobs):
    """The curve's progress bar counts requests run: every task runs every request, in this
    process (reported as it goes) or in workers (through the shared counter); the points do
    not depend on where they ran."""
    trace = read_trace(str(make_trace(tmp_path / "t.jsonl", seed=5)))
    inp = build_input(trace.requests, rule="vllm", block_size=16, warmup=0.0)
    tasks = [Task("simulation", "lfu", 40), Task("simulation", "fifo", 200),
             Task("replay", "lru", 30), Task("replay", "lru", 1)]     # 1: nothing fits
    done: list[int] = []
    points = run_tasks(tasks, inp, trace, 0.0, jobs=jobs, advance=done.append)
    assert sum(done) == len(tasks) * inp.num_requests
    if jobs == 1:       # in this process the bar moves within points, not once a point
        assert len(done) > len(tasks)                # (workers' reads depend on timing)
    by_task = {p.task: p for p in points}
    assert set(by_task) == set(tasks)
    assert by_task[tasks[3]] == (tasks[3], 0, 0, inp.num_requests)
    assert (by_task[tasks[0]].hit_tokens, by_task[tasks[0]].prompt_tokens) == \
        tuple(simulate(inp, "lfu", 40)[2:4])
