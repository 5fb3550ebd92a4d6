"""Small builders shared by the core tests (not a test module)."""

from __future__ import annotations

import contextlib

from kvcore.hashing import BlockHasher
from kvcore.kv_cache_manager import KVCacheManager, KVCachePoolConfig
from kvcore.request import Request
from kvcore.specs import FullAttentionSpec, KVCacheGroupSpec, SlidingWindowSpec

C3 = [0] * 16 + [1] * 16 + [2] * 16


def spec(kind: str | tuple, bs: int = 16):
    if kind == "full":
        return FullAttentionSpec(block_size=bs)
    _, window = kind
    return SlidingWindowSpec(block_size=bs, sliding_window=window)


def make_manager(num_blocks: int, groups=("full",), bs: int = 16, **kw) -> KVCacheManager:
    """Groups: "full" or ("swa", W). ``kw`` goes to KVCacheManager (enable_caching, ...)."""
    cfg = KVCachePoolConfig(num_blocks, [KVCacheGroupSpec((f"l{i}",), spec(g, bs))
                                     for i, g in enumerate(groups)])
    kw.setdefault("max_model_len", 8192)
    return KVCacheManager(cfg, hash_block_size=bs, scheduler_block_size=bs, **kw)


_HASHERS: dict = {}


def make_request(rid: str, tokens, bs: int = 16, hash_name: str = "sha256", **kw) -> Request:
    key = (bs, hash_name)
    if key not in _HASHERS:
        _HASHERS[key] = BlockHasher(bs, hash_name)
    return Request(rid, list(tokens), _HASHERS[key], **kw)


def ids(blocks) -> list | None:
    """Block ids of a KVCacheBlocks (one list per group), None for None."""
    return None if blocks is None else [list(g) for g in blocks.get_block_ids()]


def queue_ids(mgr) -> list[int]:
    return [b.block_id for b in mgr.block_pool.free_block_queue.get_all_free_blocks()]


@contextlib.contextmanager
def keys_deleted(pool, keys):
    """Temporarily remove (hash, group) keys from the prefix-cache map."""
    # (past the pool: no kept lookup (`kvcore.lookup_memo`) would see the change)
    pool.lookup_watch = None
    saved = []
    for h, g in keys:
        m = pool.cached_block_hash_to_block.group_map(g)
        if h in m:
            saved.append((m, h, m.pop(h)))
    try:
        yield
    finally:
        for m, h, v in saved:
            m[h] = v
        pool.lookup_watch = None
