"""Eviction policies of `kvcli curve`: the `lru` simulation is the KVCacheManager replay (the
proof that simulated points are exact), and each policy evicts what it says, on hand-built
sequences whose hits are worked out below."""

from __future__ import annotations

import gzip
import json

import pytest
from test_curve_gen import CONVERSATION, make_trace

from kvcore.analysis.curve.input import build_input
from kvcore.analysis.curve.onepass import one_pass
from kvcore.analysis.curve.sim import simulate
from kvcore.analysis.policies import POLICIES, make_policy
from kvcore.engine.replay import ReplayOptions, replay
from kvcore.traces import read_trace


def write(tmp_path, prompts, tb=4):
    """prompts: (hash_ids, input_length) in arrival order."""
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps({"timestamp": i, "input_length": n, "output_length": 1,
                                     "hash_ids": ids, "block_size": tb}) + "\n"
                         for i, (ids, n) in enumerate(prompts)))
    return read_trace(str(p))


def kvm(trace, bs, capacity, warmup=0.0):
    return replay(trace.path, ReplayOptions(mode="cache", block_size=bs, num_blocks=capacity + 1,
                                            warmup=warmup), trace=trace)


def test_registry():
    assert list(POLICIES) == ["lru", "fifo", "lfu", "eager", "optimal"]
    assert make_policy("optimal").needs_next_use and not make_policy("eager").keeps_freed


@pytest.mark.parametrize("bs,warmup", [(16, 0.0), (8, 0.25), (32, 0.0)])
def test_lru_simulation_is_the_kvcache_manager_replay(tmp_path, bs, warmup):
    """Hits, counted tokens, rejections and evictions agree at every capacity tried: tiny pools
    that reject the large requests, pools where block-aligned repeats cache duplicate blocks,
    and pools that hold everything."""
    trace = read_trace(str(make_trace(tmp_path / "g.jsonl", seed=2, aligned_repeats=True)))
    inp = build_input(trace.requests, rule="vllm", block_size=bs, warmup=warmup)
    biggest = int(inp.num_blocks.max())
    smallest = int(inp.num_blocks.min())     # below it nothing runs (the replay refuses)
    caps = sorted({smallest, smallest + 2, 8, biggest // 2, biggest - 1, biggest, biggest + 1,
                   2 * biggest, 150, 400, 900, 3000} - set(range(smallest)))
    rejected_somewhere = dup_somewhere = False
    for c in caps:
        s = kvm(trace, bs, c, warmup)
        r = simulate(inp, "lru", c)
        assert (r.hit_tokens, r.prompt_tokens, r.rejected, r.evictions) == \
            (s.hit_tokens, s.prompt_tokens, s.rejected, s.evictions), c
        rejected_somewhere |= r.rejected > 0
    op = one_pass(inp)
    dup_somewhere = op.exact_max < 3000
    assert rejected_somewhere and dup_somewhere


def test_lru_evicts_the_tail_of_a_request_first(tmp_path):
    """R1 = [a b c] + a partial block, then R2 needs 3 blocks in a 5-block pool: 2 unhashed
    ones (the never-used one and R1's partial block) and one eviction, which takes R1's tail c,
    not its head a. So R3 = R1 hits a and b (8 tokens), and evicts once more for its own room."""
    trace = write(tmp_path, [([1, 2, 3, 4], 13), ([5, 6, 7], 9), ([1, 2, 3, 4], 13)])
    inp = build_input(trace.requests, rule="vllm", block_size=4)
    r = simulate(inp, "lru", 5)
    assert (r.hit_tokens, r.evictions) == (8, 2)
    s = kvm(trace, 4, 5)
    assert (s.hit_tokens, s.evictions) == (8, 2)


def test_duplicate_block_for_an_aligned_repeat(tmp_path):
    """A 2-block-aligned prompt repeated hits 1 block (N-1 cap), and its last block is cached a
    second time: in a 3-block pool the duplicate takes the room that the other request's block
    had, so the third request misses under vLLM and under the simulation alike."""
    trace = write(tmp_path, [([1, 2], 8), ([9], 3), ([1, 2], 8), ([9], 3)])
    inp = build_input(trace.requests, rule="vllm", block_size=4)
    s, r = kvm(trace, 4, 3), simulate(inp, "lru", 3)
    assert s.hit_tokens == r.hit_tokens == 4        # only the repeat's first block hits
    assert s.evictions == r.evictions == 1
    assert one_pass(inp).hit_tokens(3) == 4 + 0    # the one pass happens to agree here...
    assert one_pass(inp).exact_max < 3              # ...but knows it is outside its range


# Single-block requests, capacity 2, --rule trace: a b a c b a.
#   lru:     a- b- a+ c-(evicts b) b-(evicts a) a-(evicts c)          -> 1 hit
#   fifo:    a- b- a+ c-(evicts a, cached first) b+ a-(evicts b)      -> 2 hits
#   lfu:     a- b- a+(a used twice) c-(evicts b) b-(evicts c) a+      -> 2 hits
#   optimal: a- b- a+ c-(evicts a: next needed at 6, b at 5) b+ a-    -> 2 hits
#   eager:   nothing survives a request                                -> 0 hits
@pytest.mark.parametrize("policy,hits", [("lru", 1), ("fifo", 2), ("lfu", 2), ("optimal", 2),
                                         ("eager", 0)])
def test_policies_by_hand(tmp_path, policy, hits):
    ids = {"a": 1, "b": 2, "c": 3}
    trace = write(tmp_path, [([ids[k]], 4) for k in "abacba"])
    inp = build_input(trace.requests, rule="trace", block_size=4)
    r = simulate(inp, policy, 2)
    assert (r.hit_tokens, r.prompt_tokens) == (4 * hits, 24)


def test_lfu_keeps_the_frequent_block_lru_does_not(tmp_path):
    """a a a b c a in a 2-block cache: LRU evicts a for c; LFU evicts b (used once)."""
    trace = write(tmp_path, [([k], 4) for k in (1, 1, 1, 2, 3, 1)])
    inp = build_input(trace.requests, rule="trace", block_size=4)
    assert simulate(inp, "lru", 2).hit_tokens == 8
    assert simulate(inp, "lfu", 2).hit_tokens == 12


@pytest.mark.parametrize("rule", ["vllm", "trace"])
def test_eager_never_hits_in_cache_mode_and_optimal_bounds_lru(tmp_path, rule):
    trace = read_trace(str(make_trace(tmp_path / "g.jsonl", seed=4)))
    inp = build_input(trace.requests, rule=rule, block_size=16)
    for c in (60, 200, 700):
        e, lru, opt = (simulate(inp, p, c) for p in ("eager", "lru", "optimal"))
        assert e.hit_tokens == 0 and e.prompt_tokens == lru.prompt_tokens
        assert opt.hit_tokens >= lru.hit_tokens


# The cache-mode oracle (real vLLM 0.33.0, its `cache_mode` command, see tests/data/README.md;
# block size 512, no warm-up) on the conversation trace: capacity -> (hit rate, rejected).
ORACLE = {100: (0.051944837850781425, 386), 246: (0.04278474794651364, 1),
          247: (0.04275099497856342, 0), 1953: (0.05587, 0), 3000: (0.06859253933781416, 0),
          7812: (0.18495, 0), 30000: (0.337114049402508, 0)}


@pytest.mark.slow
def test_conversation_trace_matches_the_oracle():
    trace = read_trace(str(CONVERSATION))
    inp = build_input(trace.requests, rule="vllm", block_size=512)
    op = one_pass(inp)
    assert op.hit_rate(float("inf")) == pytest.approx(0.37338, abs=5e-6)
    for c, (rate, rejected) in ORACLE.items():
        r = simulate(inp, "lru", c)
        assert r.hit_rate == pytest.approx(rate, abs=5e-6) and r.rejected == rejected, c
        if op.is_exact(c):
            assert op.hit_rate(c) == pytest.approx(rate, abs=5e-6)


@pytest.mark.slow
def test_lru_simulation_is_the_replay_on_the_conversation_trace(tmp_path):
    """The same agreement on real data: the first 1,500 requests of the conversation trace,
    at a capacity that rejects some of them, one under pressure and one that holds most."""
    lines = gzip.decompress(CONVERSATION.read_bytes()).decode().splitlines()[:1500]
    path = tmp_path / "head.jsonl"
    path.write_text("\n".join(lines) + "\n")
    trace = read_trace(str(path))
    inp = build_input(trace.requests, rule="vllm", block_size=512)
    rejected = []
    for c in (100, 1000, 20000):
        s, r = kvm(trace, 512, c), simulate(inp, "lru", c)
        assert (r.hit_tokens, r.prompt_tokens, r.rejected, r.evictions) == \
            (s.hit_tokens, s.prompt_tokens, s.rejected, s.evictions), c
        rejected.append(s.rejected)
    assert rejected[0] > 0 == rejected[2]
