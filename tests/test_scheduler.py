"""The scheduler, driven directly (reference §10.4 scenarios, in our own words).

Every expected number below is worked out by hand from vLLM 0.33's rules, in the comments.
"""

from __future__ import annotations

import pytest

from kvcore.engine.scheduler import Scheduler, SchedulerConfig
from kvcore.hashing import BlockHasher
from kvcore.kv_cache_manager import KVCacheManager
from kvcore.request import Request, RequestStatus
from kvcore.specs import FullAttentionSpec, KVCacheGroupSpec


def make(num_blocks=10_000, bs=16, **cfg):
    max_len = cfg.setdefault("max_model_len", 8192)
    kvm = KVCacheManager([KVCacheGroupSpec(("l",), FullAttentionSpec(block_size=bs))], max_len,
                         num_blocks=num_blocks, hash_block_size=bs)
    return Scheduler(SchedulerConfig(**cfg), kvm), BlockHasher(bs)


_order = iter(range(10**9))


def req(hasher, rid, n, max_tokens=16, priority=0, tok=None):
    tok = rid_tok(rid) if tok is None else tok
    return Request(rid, [tok] * n, hasher, arrival_time=float(next(_order)),
                   priority=priority, max_tokens=max_tokens)


def rid_tok(rid: str) -> int:
    return sum(map(ord, rid))


def step(s: Scheduler):
    out = s.schedule()
    finished = s.update_from_output(out, lambda r: 1000 + r.num_output_tokens)
    return out, finished


def assert_empty(s: Scheduler):
    pool = s.kv_cache_manager.block_pool
    assert not s.running and len(s.waiting) == 0 and not s.requests
    assert pool.get_num_free_blocks() == pool.num_gpu_blocks - 1
    assert all(b.ref_cnt == 0 for b in pool.blocks[1:])


@pytest.mark.parametrize("caching", [True, False])
def test_concurrent_partial_prefill(caching):
    # Three 800-token prompts, budget 1024, threshold 400: each gets at most 400 a step.
    s, h = make(max_num_batched_tokens=1024, long_prefill_token_threshold=400)
    if not caching:
        s.kv_cache_manager.enable_caching = False
    for i in range(3):
        s.add_request(req(h, f"r{i}", 800, max_tokens=2))
    got = [list(step(s)[0].num_scheduled_tokens.values()) for _ in range(3)]
    # r0, r1 take 400 each; r2 the remaining 224. Then again; then r0 and r1 decode one token
    # each (their prefill ended at 800 and sampled) and r2 finishes its last 352.
    assert got == [[400, 400, 224], [400, 400, 224], [1, 1, 352]]


def test_threshold_ignored_for_a_lone_request():
    # 0.33: with one eligible request nobody starves, so the cap does not apply.
    s, h = make(max_num_batched_tokens=1024, long_prefill_token_threshold=400)
    s.add_request(req(h, "r0", 800, max_tokens=1))
    out, fin = step(s)
    assert out.num_scheduled_tokens == {"r0": 800} and fin == ["r0"]


@pytest.mark.parametrize("chunked, expected", [(True, {"r0": 800, "r1": 224}),
                                               (False, {"r0": 800})])
def test_schedule_order(chunked, expected):
    # Budget 1024, max_num_seqs 3, prompts 800, 800, 10, 10. Chunked: r1 gets the 224 left and
    # the budget is spent. Not chunked: r1 does not fit and the loop stops; it never skips
    # ahead to the small r2/r3.
    s, h = make(max_num_batched_tokens=1024, max_num_seqs=3, enable_chunked_prefill=chunked)
    for i, n in enumerate((800, 800, 10, 10)):
        s.add_request(req(h, f"r{i}", n))
    out = s.schedule()
    assert out.num_scheduled_tokens == expected
    assert [r.request_id for r in s.running] == list(expected)


def test_fcfs_preempts_the_last_running_request():
    # 11 blocks = 10 usable, bs 16. Two 80-token prompts of 5 blocks each fill the pool in step
    # 0. In step 1 r0 needs a 6th block: FCFS takes running[-1] = r1 (not r0, the requester).
    s, h = make(num_blocks=11, max_num_batched_tokens=200)
    s.add_request(req(h, "r0", 80, max_tokens=3))
    s.add_request(req(h, "r1", 80, max_tokens=3))
    out, _ = step(s)
    assert out.num_scheduled_tokens == {"r0": 80, "r1": 80}
    assert s.kv_cache_manager.block_pool.get_num_free_blocks() == 0
    out, _ = step(s)
    assert out.preempted == ["r1"]
    assert out.num_scheduled_tokens == {"r0": 1} and out.admitted == {}   # no admission after
    r1 = s.requests["r1"]
    assert r1.status == RequestStatus.PREEMPTED and r1.num_computed_tokens == 0
    assert r1.num_preemptions == 1 and r1.num_tokens == 81   # keeps its sampled token
    assert s.waiting.peek() is r1
    # r1's blocks went back tail first and stay cached; r0 took the first of them (r1's 5th
    # block), so r1 can hit 4 blocks. Re-admission needs 6 blocks for 81 tokens: 4 hits (all
    # free) + 2 new > the 4 free blocks, so r1 waits until r0 finishes (step 3).
    out, fin = step(s)
    assert out.num_scheduled_tokens == {"r0": 1} and fin == ["r0"]
    out, _ = step(s)
    assert out.admitted == {"r1": 64}
    assert out.num_scheduled_tokens == {"r1": 81 - 64}
    while s.has_unfinished_requests():
        step(s)
    assert_empty(s)


def test_priority_preemption_and_resumption():
    # S25: priority policy, 5 blocks (4 usable), bs 16, budget 200, max_num_seqs 2.
    s, h = make(num_blocks=5, max_num_batched_tokens=200, max_num_seqs=2, policy="priority")
    low = req(h, "low", 30, max_tokens=10, priority=1)
    s.add_request(low)
    out, _ = step(s)                              # low prefills 30 tokens (2 blocks), samples 1
    assert out.num_scheduled_tokens == {"low": 30}
    high = req(h, "high", 32, max_tokens=3, priority=0)
    s.add_request(high)
    out, _ = step(s)                              # low decodes; high admitted with 2 blocks
    assert out.num_scheduled_tokens == {"low": 1, "high": 32}
    assert s.kv_cache_manager.block_pool.get_num_free_blocks() == 0
    out, _ = step(s)
    # low (32 tokens, 2 blocks) is scheduled first, then high (33 tokens) needs a 3rd block:
    # the victim is max (priority, arrival) = low, whose scheduling is undone.
    assert out.preempted == ["low"]
    assert out.num_scheduled_tokens == {"high": 1}
    assert low.status == RequestStatus.PREEMPTED and len(s.waiting) == 1
    assert [r.request_id for r in s.running] == ["high"]
    out, fin = step(s)                            # high's last token; low cannot fit yet
    assert fin == ["high"] and out.admitted == {}
    out, _ = step(s)
    # low resumes with 30 prompt + 2 generated tokens. Its block 1 was reused by high, so only
    # block 0 (16 tokens) hits.
    assert out.admitted == {"low": 16}
    assert out.num_scheduled_tokens == {"low": 16}
    # 16 hit + 16 scheduled = the 32 tokens it had; this step sampled its 33rd.
    assert low.num_tokens == 33 and low.num_preemptions == 1
    while s.has_unfinished_requests():
        step(s)
    assert_empty(s)


def test_priority_queue_order_and_no_waiting_preemption():
    # Waiting requests never preempt: a high-priority arrival waits for room.
    s, h = make(num_blocks=4, max_num_batched_tokens=100, policy="priority")
    s.add_request(req(h, "a", 40, max_tokens=4, priority=5))    # 3 blocks = the whole pool
    step(s)
    s.add_request(req(h, "b", 20, max_tokens=1, priority=0))
    s.add_request(req(h, "c", 20, max_tokens=1, priority=0))
    out, _ = step(s)
    assert out.admitted == {} and out.preempted == []
    assert [r.request_id for r in s.waiting] == ["b", "c"]


def test_max_model_len_finishes_a_request():
    s, h = make(max_model_len=40)
    r = req(h, "r", 30, max_tokens=100)
    s.add_request(r)
    fin = []
    while not fin:
        fin = step(s)[1]
    # Stops when num_tokens reaches max_model_len: 30 prompt + 10 outputs.
    assert r.num_tokens == 40 and r.status == RequestStatus.FINISHED_LENGTH_CAPPED
    assert_empty(s)


def test_memory_leak_free():
    # Five 10-token requests with a shared prompt, 10 outputs each, prefix caching on.
    s, h = make()
    for i in range(5):
        s.add_request(req(h, f"r{i}", 10, max_tokens=10, tok=7))
    n = 0
    while s.has_unfinished_requests():
        step(s)
        n += 1
    assert n == 10
    assert_empty(s)


@pytest.mark.parametrize("trace, opts", [
    ("tests/data/sched_cases/b_preemption.trace.jsonl", {"arrivals": "step"}),
    ("tests/data/sched_cases/d_priority.trace.jsonl", {"arrivals": "step"}),
    ("traces/multiturn-chat.jsonl", {"num_blocks": 600}),
    ("traces/multiturn-chat.jsonl", {"arrivals": "ignore", "num_blocks": 700}),
    ("traces/shared-prefix.jsonl", {"mode": "cache", "num_blocks": 100}),
])
def test_every_block_is_free_after_a_replay(trace, opts):
    from pathlib import Path

    from kvcore.engine.context import ReplayContext
    from kvcore.engine.engine_loop import EngineLoop
    from kvcore.engine.options import ReplayOptions, resolve
    from kvcore.engine.replay import run
    from kvcore.traces import read_trace

    root = Path(__file__).resolve().parents[1]
    tr = read_trace(str(root / trace))
    ctx = ReplayContext(tr, resolve(ReplayOptions(**opts), tr.config), None)
    loop = EngineLoop(ctx) if ctx.cfg.mode == "engine" else None
    run(ctx, loop)
    s = ctx.summary
    pool = ctx.kvm.block_pool
    assert s.finished == s.requests and s.num_free_blocks_end == pool.num_gpu_blocks - 1
    assert all(b.ref_cnt == 0 for b in pool.blocks[1:])
    if loop is not None:
        assert not loop.sched.requests and not loop.sched.running and len(loop.sched.waiting) == 0
