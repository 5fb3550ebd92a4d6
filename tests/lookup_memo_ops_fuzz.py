"""Random op sequences on one `KVCacheManager` for the lookup memo's fuzz (`test_lookup_memo_fuzz.py`;
not a test module): a few waiting heads are looked up again and again while other requests are
admitted with their hits, prefilled, decoded and freed, blocks are evicted (by allocations,
`evict_blocks`, a raw `get_new_blocks`), the prefix cache is reset, and a head grows a token
or is preempted; after every lookup its answer must be a full lookup's (the same block
objects, hit and boundary). Reaches what replays do not: `evict_blocks`, resets, EAGLE's
dropped block (one group), dense retention."""

from __future__ import annotations

import random
from collections import Counter

from kvcore.hashing import BlockHasher
from kvcore.kv_cache_manager import KVCacheManager, KVCachePoolConfig
from kvcore.managers.registry import spec_from_group_config
from kvcore.request import Request
from kvcore.specs import KVCacheGroupSpec

STACKS = (("full",), ("swa",), ("chunk",), ("mamba",), ("full", "swa"), ("swa", "full"),
          ("full", "chunk"), ("full", "mamba"), ("mamba", "full"), ("swa", "mamba"),
          ("full", "full"), ("full", "swa", "swa"))


def _manager(rng: random.Random, bs: int) -> tuple[KVCacheManager, bool]:
    kinds = rng.choice(STACKS)
    cfgs = {"full": lambda: {"type": "full"},
            "swa": lambda: {"type": "sliding_window", "sliding_window": rng.randrange(1, 3 * bs)},
            "chunk": lambda: {"type": "chunked_local", "attention_chunk_size": bs * rng.randrange(
                1, 4)},
            "mamba": lambda: {"type": "mamba", "checkpoint": False}}
    groups = [KVCacheGroupSpec((f"l{i}",), spec_from_group_config(cfgs[k](), bs))
              for i, k in enumerate(kinds)]
    eagle = len(kinds) == 1 and kinds[0] in ("full", "swa") and rng.random() < 0.4
    mgr = KVCacheManager(KVCachePoolConfig(rng.randrange(8, 60) * len(kinds), groups), 4096,
                         hash_block_size=bs, scheduler_block_size=bs, use_eagle=eagle,
                         prefix_cache_retention_interval=rng.choice([None, 0]))
    return mgr, "mamba" in kinds


class Differs(AssertionError):
    """A lookup's answer is not the full lookup's."""


def _ids(blocks) -> list[list[int]]:
    return [[id(b) for b in g] for g in blocks]


def run_ops_case(seed: int, steps: int = 300) -> Counter:
    """One seed's op sequence; `Differs` names the first lookup that differs."""
    rng = random.Random(seed)
    bs = rng.choice([2, 4, 8])
    mgr, mamba = _manager(rng, bs)
    hasher = BlockHasher(bs, "sha256")
    pool = mgr.block_pool
    seen: Counter = Counter()
    prefixes = [[rng.randrange(1, 50) for _ in range(bs * rng.randrange(1, 6))] for _ in range(3)]

    def tokens() -> list[int]:
        p = rng.choice(prefixes)
        return p[:rng.randrange(len(p) + 1)] + [rng.randrange(1, 50) for _ in range(
            rng.randrange(1, 3 * bs))]
    n = 0
    heads = [Request(f"h{i}", tokens(), hasher) for i in range(3)]
    head = heads[0]
    running: list[Request] = []
    for _ in range(steps):
        mgr.new_step_starts()
        r = rng.random()
        if r < 0.4:
            got = mgr.get_computed_blocks(head)
            cap = head.num_tokens - 1
            if mgr.lookup_memo is not None and mgr.lookup_memo.holds(head, cap):
                seen["kept"] += 1
            blocks, hit, unc = mgr.coordinator.find_longest_cache_hit(head.block_hashes, cap)
            want = (_ids(blocks), hit, hit + unc if unc else 0)
            if (_ids(got[0].blocks), got[1], got[2]) != want:
                raise Differs(f"ops seed {seed}: {head.request_id}'s lookup")
            seen["lookups"] += 1
        elif r < 0.47:
            head = rng.choice(heads)
        elif r < 0.6 or r < 0.66 and not mamba:     # admit a request (the head, at times)
            req = head if rng.random() < 0.15 else Request(f"r{n}", tokens(), hasher)
            n += 1
            blocks, hit, _ = mgr.get_computed_blocks(req)
            todo = req.num_tokens - hit
            k = todo if mamba or rng.random() < 0.5 else rng.randrange(1, todo + 1)
            if mgr.allocate_slots(req, k, hit, blocks) is not None:
                req.num_computed_tokens = hit + k
                running.append(req)
                if req is head:
                    heads[heads.index(head)] = head = Request(f"h{n}+", tokens(), hasher)
        elif r < 0.75 and running:                  # prefill or decode one
            req = rng.choice(running)
            if req.num_computed_tokens == req.num_tokens:
                req.append_output_token_ids(rng.randrange(1, 50))
            if mgr.allocate_slots(req, req.num_tokens - req.num_computed_tokens) is not None:
                req.num_computed_tokens = req.num_tokens
        elif r < 0.85 and running:
            mgr.free(running.pop(rng.randrange(len(running))))
        elif r < 0.9:
            mgr.evict_blocks(rng.sample(range(1, pool.num_gpu_blocks),
                                        min(3, pool.num_gpu_blocks - 1)))
        elif r < 0.93 and pool.get_num_free_blocks() > 1:
            pool.free_blocks(pool.get_new_blocks(rng.randrange(1, min(
                4, pool.get_num_free_blocks()))))
        elif r < 0.95:
            seen["resets"] += mgr.reset_prefix_cache()
        elif r < 0.98:
            head.append_output_token_ids(rng.randrange(1, 50))
        else:
            head.num_preemptions += 1
    return seen
