"""The lookup memo (`kvcore.lookup_memo`) at the manager: each way the pool can change a kept
answer drops the watch (a block cached under the head's first miss, a hit evicted by an
allocation or by `evict_blocks`, the first of two blocks under one hash evicted, a reset), and
changes elsewhere keep it; which stacks get a memo."""

from __future__ import annotations

from kvtest_helpers import make_manager, make_request, queue_ids

from kvcore.kv_cache_manager import KVCacheManager, KVCachePoolConfig
from kvcore.lookup_memo import memo_rule
from kvcore.specs import (
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    KVCacheGroupSpec,
    MambaSpec,
    SlidingWindowSpec,
)

T = list(range(1, 13))          # three blocks of 4


def ids(answer) -> list[list[int]]:
    return [[b.block_id for b in g] for g in answer[0].blocks]


def kept(answer, before) -> bool:
    """The kept answer: the same blocks object (the compiled build boxes a new tuple)."""
    return answer[0] is before[0] and answer[1:] == before[1:]


def cached_then_freed(mgr: KVCacheManager, rid: str, tokens: list[int]) -> list[int]:
    """Blocks computed for ``tokens`` (no hits taken), cached, freed: their ids."""
    req = make_request(rid, tokens, bs=4)
    blocks = mgr.allocate_slots(req, len(tokens))
    mgr.free(req)
    return blocks.get_block_ids()[0]


def watched_head(mgr: KVCacheManager, tokens: list[int]):
    """A head looked up as a refused head is, step after step: the first lookup notes it, the
    second (in full: the same blocks) sets the watch, the third is the kept answer."""
    head = make_request("head", tokens, bs=4)
    first = mgr.get_computed_blocks(head)
    assert not mgr.lookup_memo.holds(head, head.num_tokens - 1)
    second = mgr.get_computed_blocks(head)
    assert second is not first and ids(second) == ids(first) and second[1:] == first[1:]
    assert mgr.lookup_memo.holds(head, head.num_tokens - 1)
    assert kept(mgr.get_computed_blocks(head), second)
    return head, second


def test_a_block_cached_under_the_first_miss_extends_the_hit():
    mgr = make_manager(30, bs=4)
    a = cached_then_freed(mgr, "a", T)
    head, first = watched_head(mgr, T + [50, 51, 52, 53, 54])
    assert ids(first) == [a] and first[1] == 12
    # another request computes the head's fourth block: cached under the head's first miss
    c = make_request("c", T + [50, 51, 52, 53], bs=4)
    mgr.allocate_slots(c, 16)
    assert not mgr.lookup_memo.holds(head, head.num_tokens - 1)
    again = mgr.get_computed_blocks(head)
    assert again[1] == 16 and ids(again)[0][:3] == a


def test_caching_and_evicting_elsewhere_keeps_the_answer():
    mgr = make_manager(30, bs=4)
    cached_then_freed(mgr, "a", T)
    head, first = watched_head(mgr, T + [50])
    other = make_request("o", [90 + i for i in range(8)], bs=4)
    mgr.allocate_slots(other, 8)    # caches two blocks under other hashes, evicts none of T's
    assert kept(mgr.get_computed_blocks(head), first)


def test_an_allocation_evicting_a_hit_shortens_it():
    mgr = make_manager(30, bs=4)
    a = cached_then_freed(mgr, "a", T)
    head, _ = watched_head(mgr, T + [50])
    queue = queue_ids(mgr)
    mgr.block_pool.get_new_blocks(queue.index(a[1]) + 1)     # evicts block a[1] (and a[2])
    assert ids(mgr.get_computed_blocks(head)) == [a[:1]]


def test_evict_blocks_and_reset_drop_the_watch():
    mgr = make_manager(30, bs=4)
    a = cached_then_freed(mgr, "a", T)
    head, _ = watched_head(mgr, T + [50])
    mgr.evict_blocks([a[2]])
    assert ids(mgr.get_computed_blocks(head)) == [a[:2]]
    head, _ = watched_head(mgr, T + [50])
    assert mgr.reset_prefix_cache()
    assert mgr.get_computed_blocks(head)[1] == 0


def test_the_second_block_under_a_hash_takes_over():
    """Two blocks under each hash (the same tokens computed twice): the lookup answers the
    first; once the first is evicted, the second."""
    mgr = make_manager(30, bs=4)
    a = cached_then_freed(mgr, "a", T)
    b = cached_then_freed(mgr, "b", T)      # no hits taken: duplicates under T's hashes
    head, first = watched_head(mgr, T + [50])
    assert ids(first) == [a]
    mgr.evict_blocks([a[0]])
    assert ids(mgr.get_computed_blocks(head)) == [[b[0], a[1], a[2]]]


def test_admission_forgets():
    mgr = make_manager(30, bs=4)
    cached_then_freed(mgr, "a", T)
    head, first = watched_head(mgr, T + [50])
    mgr.allocate_slots(head, 1, first[1], first[0])
    assert mgr.lookup_memo.req is None and mgr.block_pool.lookup_watch is None


def test_a_new_token_raises_the_cap():
    """Same hashes, one more token: the cap reaches the last cached block."""
    mgr = make_manager(30, bs=4)
    a = cached_then_freed(mgr, "a", T)
    head, first = watched_head(mgr, T)
    assert ids(first) == [a[:2]]                # (12 tokens: at most 11 can hit)
    head.append_output_token_ids(99)
    assert ids(mgr.get_computed_blocks(head)) == [a]


def test_a_sliding_window_alone_reads_past_its_hit():
    """A sliding window scans from the cap down: a block cached two past its hit's end (and
    nothing nearer) makes a later run whole, so every hash under the cap is watched."""
    mgr = make_manager(30, groups=(("swa", 9),), bs=4)     # a hit needs 2 blocks in a row
    tokens = list(range(1, 22))                 # 5 full blocks (cap 20)
    a = cached_then_freed(mgr, "a", tokens[:16])
    mgr.evict_blocks([a[2]])                    # cached: 0, 1, 3
    head, first = watched_head(mgr, tokens)
    assert first[1] == 8                        # the run 0-1; 3 alone is too short
    pool = mgr.block_pool
    blocks = pool.get_new_blocks(5)
    pool.cache_full_blocks(head, blocks, 4, 5, 4, 0)       # block 4 alone: the run 3-4
    again = mgr.get_computed_blocks(head)
    assert again[1] == 20 and [b.block_id for b in again[0].blocks[0][3:]] == [
        a[3], blocks[4].block_id]


def _rule(*specs, **kw) -> int:
    cfg = KVCachePoolConfig(64, [KVCacheGroupSpec((f"l{i}",), s) for i, s in enumerate(specs)])
    mgr = KVCacheManager(cfg, 4096, **kw)
    return memo_rule(mgr.coordinator) if mgr.lookup_memo is not None else 0


def test_which_stacks_keep_lookups():
    full, sliding = FullAttentionSpec(block_size=16), SlidingWindowSpec(16, sliding_window=64)
    chunked = ChunkedLocalAttentionSpec(16, attention_chunk_size=64)
    mamba = MambaSpec(16, shapes=((4,),), dtypes=("float32",))
    assert _rule(full) == 1                     # up to the first miss
    assert _rule(chunked) == 1
    assert _rule(sliding) == 2                  # scanned from the cap down: every hash
    assert _rule(full, sliding) == 1            # full attention first bounds the others
    assert _rule(mamba, full) == 1
    assert _rule(sliding, chunked) == 2
    assert _rule(full, enable_caching=False) == 0
    # several block sizes: another group's keys are not the request's hashes
    assert _rule(FullAttentionSpec(block_size=32), sliding) == 0
    # full attention's hit cut to a coarser scheduler block stops short of its miss
    assert _rule(full, sliding, scheduler_block_size=32) == 2
