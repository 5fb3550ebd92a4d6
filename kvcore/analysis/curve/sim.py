"""Exact cache-mode simulation at one capacity, with any eviction policy, under a hit rule.

One request at a time (cache mode): look up, take blocks, release. The simulator follows the
KVCacheManager's rules and leaves only the choice of the victim to the policy
(`kvcore.analysis.policies`), so with `lru` it *is* the KVCacheManager replay, block for block
(`tests/test_policies.py` checks it against the real one):

``--rule vllm``
  * a request of T = ceil(N / bs) blocks runs only if T <= capacity (all blocks are free
    between requests); otherwise it is rejected: left out of the hit rate, counted as rejected;
  * its hit is the longest run of cached full-block keys, at most (N - 1) // bs blocks; the hit
    blocks are held (not evictable) while it runs; a key cached in several blocks hits the one
    cached first (vLLM's `BlockHashToBlockMap.get_one_block`);
  * its other T - h blocks come from the free blocks that hold no key first (the unhashed
    partial block of the previous request, never-used blocks), then from evictions;
  * its full blocks are cached, a second block for a key that is still cached included (vLLM
    keeps duplicates); the partial last block stays unhashed;
  * it frees its blocks tail first.

``--rule trace``
  * every block is a cacheable unit, the hit is the longest run of cached keys with no cap;
  * the blocks are then touched tail first, one at a time: a cached key is refreshed, a missing
    one is cached, evicting a victim when the cache is full (possibly one of this request's own
    blocks when the request is larger than the cache). Nothing is rejected.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from kvcore.analysis.curve.input import CurveInput
from kvcore.analysis.policies import make_policy

INF = float("inf")


class SimResult(NamedTuple):
    policy: str
    capacity_blocks: int
    hit_tokens: int
    prompt_tokens: int       # of the counted (past warm-up, not rejected) requests
    rejected: int            # requests larger than the whole pool (all requests, warm-up included)
    evictions: int           # cached keys dropped to make room

    @property
    def hit_rate(self) -> float:
        return self.hit_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


def next_uses(inp: CurveInput) -> list[float]:
    """For each key (in `inp.keys` order), the index of the next request that holds the same key
    (`inf` if none), plus the key's position as a fraction so deeper blocks count as later."""
    keys, starts = inp.keys, inp.starts
    n = len(keys)
    counts = np.diff(starts)
    req = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    depth = np.arange(n, dtype=np.int64) - starts[req]
    order = np.argsort(keys, kind="stable")
    same = keys[order[1:]] == keys[order[:-1]]
    nxt = np.full(n, INF)
    nxt[order[:-1][same]] = req[order[1:][same]] + depth[order[1:][same]] / (1 << 24)
    return nxt.tolist()


def simulate(inp: CurveInput, policy_name: str, capacity: int,
             tick: Callable[[int], None] = lambda n: None) -> SimResult:
    """Replay `inp` through a cache of `capacity` usable blocks evicting by `policy_name`;
    ``tick(n)`` is told of every `TICK` requests done (and of the rest at the end): the
    progress of a long point (a simulation of a large trace can take minutes)."""
    run = _simulate_vllm if inp.rule == "vllm" else _simulate_trace
    result = run(inp, policy_name, capacity, tick)
    n = inp.num_requests
    if n:
        tick(n - TICK * ((n - 1) // TICK))
    return result


TICK = 1024   # requests between two ticks: the check costs nothing beside a request's work


def _simulate_vllm(inp: CurveInput, policy_name: str, capacity: int,
                   tick: Callable[[int], None]) -> SimResult:
    policy = make_policy(policy_name)
    keys = inp.keys.tolist()
    starts = inp.starts.tolist()
    nxt = next_uses(inp) if policy.needs_next_use else None
    bs = inp.block_size
    cached: dict[int, list[int]] = {}   # key -> slots holding it, in caching order
    key_of: dict[int, int] = {}         # slot -> key
    unhashed = capacity                  # free slots that hold no key
    next_slot = now = 0
    hit_tokens = prompt_tokens = rejected = evictions = 0
    for r, (n_blocks, cap, n_tok) in enumerate(zip(inp.num_blocks.tolist(), inp.hit_cap.tolist(),
                                                    inp.num_tokens.tolist())):
        if r and not r % TICK:
            tick(TICK)
        if n_blocks > capacity:
            rejected += 1
            continue
        lo, hi = starts[r], starts[r + 1]
        slots: list[int] = []
        for i in range(lo, lo + cap):           # longest cached run, within the N-1 cap
            held = cached.get(keys[i])
            if not held:
                break
            slots.append(held[0])
        h = len(slots)
        if policy.keeps_freed:
            for s in slots:
                policy.hold(s)
        need = n_blocks - h
        take = min(unhashed, need)
        unhashed -= take
        for _ in range(need - take):
            victim = policy.evict()
            k = key_of.pop(victim)
            owners = cached[k]
            owners.remove(victim)
            if not owners:
                del cached[k]
            evictions += 1
        for i in range(lo + h, hi):              # cache the full blocks (duplicates allowed)
            s = next_slot
            next_slot += 1
            key_of[s] = keys[i]
            cached.setdefault(keys[i], []).append(s)
            slots.append(s)
        if r >= inp.first_counted:
            hit_tokens += h * bs
            prompt_tokens += n_tok
        unhashed += n_blocks - (hi - lo)         # the partial last block goes back unhashed
        if policy.keeps_freed:
            for j in range(hi - lo - 1, -1, -1):   # free tail first
                now += 1
                policy.release(slots[j], now, j >= h, nxt[lo + j] if nxt else INF)
        else:
            for s in slots:
                k = key_of.pop(s)
                owners = cached[k]
                owners.remove(s)
                if not owners:
                    del cached[k]
            unhashed += hi - lo
    return SimResult(policy_name, capacity, hit_tokens, prompt_tokens, rejected, evictions)


def _simulate_trace(inp: CurveInput, policy_name: str, capacity: int,
                    tick: Callable[[int], None]) -> SimResult:
    policy = make_policy(policy_name)
    keys = inp.keys.tolist()
    weights = inp.weights.tolist()
    starts = inp.starts.tolist()
    nxt = next_uses(inp) if policy.needs_next_use else None
    slot_of: dict[int, int] = {}        # key -> its slot (one slot per key under this rule)
    key_of: dict[int, int] = {}
    next_slot = now = 0
    hit_tokens = prompt_tokens = evictions = 0
    n_tokens = inp.num_tokens.tolist()
    for r in range(len(n_tokens)):
        if r and not r % TICK:
            tick(TICK)
        lo, hi = starts[r], starts[r + 1]
        i = lo
        while i < hi and keys[i] in slot_of:
            i += 1
        if r >= inp.first_counted:
            hit_tokens += sum(weights[lo:i])
            prompt_tokens += n_tokens[r]
        if not policy.keeps_freed:               # eager: keys live only while a request runs
            continue
        for j in range(hi - 1, lo - 1, -1):     # touch tail first: the head ends most recent
            now += 1
            k = keys[j]
            nu = nxt[j] if nxt else INF
            s = slot_of.get(k)
            if s is not None:
                policy.hold(s)
                policy.release(s, now, False, nu)
                continue
            if len(slot_of) >= capacity:
                victim = policy.evict()
                del slot_of[key_of.pop(victim)]
                evictions += 1
            s = next_slot
            next_slot += 1
            slot_of[k] = s
            key_of[s] = k
            policy.release(s, now, True, nu)
    return SimResult(policy_name, capacity, hit_tokens, prompt_tokens, 0, evictions)
