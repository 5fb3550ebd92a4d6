"""A block under several prefix-cache keys (`kvcore.partial_hashes`, vLLM 0.33's partial
entries with `--prefix-match-unit` finer than the block), and the split's stop at the prompt's
last hash boundary (`kvcore.engine.mamba_split`)."""

from __future__ import annotations

from kvtest_helpers import make_request

from kvcore.block_pool import BlockPool
from kvcore.engine.mamba_split import mamba_aligned_split
from kvcore.kv_events import BlockRemoved, BlockStored, hash_to_int
from kvcore.managers.mamba_checkpoint import checkpoint_fits
from kvcore.partial_hashes import PartialHashes


def _pool(n: int = 6) -> tuple[BlockPool, PartialHashes]:
    pool = BlockPool(n, True, 16, enable_kv_cache_events=True, num_groups=2)
    pool.partial = PartialHashes(pool)
    return pool, pool.partial


def _removed(events) -> list[tuple[int, int]]:
    return [(e.block_hashes[0], e.group_idx) for e in events if isinstance(e, BlockRemoved)]


def test_a_partial_key_then_the_whole_block_key_replaces_it():
    pool, partial = _pool()
    req = make_request("r", range(100, 260), bs=16)     # 160 tokens: 10 hash blocks
    blk = pool.get_new_blocks(1)[0]
    # the prompt's boundary at 144 inside the block [80, 160): one BlockStored of 16 tokens
    h = partial.cache_partial_block(req, blk, 144, 1, 160)
    assert h == req.block_hashes[8] and blk.block_hash == h
    assert partial.num_tokens(blk, 160) == 144
    (ev,) = pool.take_events()
    assert isinstance(ev, BlockStored) and ev.block_size == 16 and ev.group_idx == 1
    assert ev.block_hashes == [hash_to_int(h)] and ev.token_ids == list(range(228, 244))
    assert ev.parent_block_hash == hash_to_int(req.block_hashes[7])
    # again: already there, nothing announced
    assert partial.cache_partial_block(req, blk, 144, 1, 160) == h
    assert pool.take_events() == []
    # the whole block cached [80, 160): the partial key goes first, announced
    pool.cache_full_blocks(req, [pool.null_block, blk], 1, 2, 80, 1)
    evs = pool.take_events()
    assert _removed(evs) == [(hash_to_int(h), 1)] and isinstance(evs[-1], BlockStored)
    assert blk.block_hash == req.block_hashes[9] and partial.num_tokens(blk, 160) == 160
    assert pool.get_cached_block(h, [1]) is None


def test_an_earlier_boundary_is_an_extra_key_and_reuse_drops_every_key_primary_first():
    pool, partial = _pool()
    req = make_request("r", range(100, 260), bs=16)
    blk = pool.get_new_blocks(1)[0]
    partial.cache_partial_block(req, blk, 144, 0, 160)
    partial.cache_partial_block(req, blk, 112, 0, 160)      # below the primary: an extra
    assert blk.block_hash == req.block_hashes[8]
    assert pool.get_cached_block(req.block_hashes[6], [0]) == [blk]
    pool.take_events()
    pool.free_blocks([blk])
    assert pool.get_new_blocks(5)[-1] is blk     # the hashed block is reused last
    assert _removed(pool.take_events()) == [(hash_to_int(req.block_hashes[8]), 0),
                                            (hash_to_int(req.block_hashes[6]), 0)]
    assert blk.block_hash is None and not partial.extras and not partial.tokens


def test_a_later_boundary_replaces_the_partial_primary():
    pool, partial = _pool()
    req = make_request("r", range(100, 260), bs=16)
    blk = pool.get_new_blocks(1)[0]
    partial.cache_partial_block(req, blk, 112, 0, 160)
    pool.take_events()
    partial.cache_partial_block(req, blk, 144, 0, 160)
    evs = pool.take_events()
    assert _removed(evs) == [(hash_to_int(req.block_hashes[6]), 0)]
    assert blk.block_hash == req.block_hashes[8] and partial.num_tokens(blk, 160) == 144


def test_moved_keys_lead_to_the_copy_silently():
    pool, partial = _pool()
    req = make_request("r", range(100, 260), bs=16)
    src, dst = pool.get_new_blocks(2)
    partial.cache_partial_block(req, src, 144, 0, 160)
    pool.take_events()
    partial.move(src, dst)
    assert pool.take_events() == []
    assert src.block_hash is None and dst.block_hash == req.block_hashes[8]
    assert pool.get_cached_block(req.block_hashes[8], [0]) == [dst]
    assert partial.num_tokens(dst, 160) == 144


def test_the_split_stops_at_the_prompts_last_hash_boundary():
    req = make_request("a", range(1000, 1257), bs=16)      # 257 tokens
    # from 240: to 256 (where a resend hits), then the last token
    assert mamba_aligned_split(req, 17, 240, 80, 512, 0, 16) == 16
    assert mamba_aligned_split(req, 17, 240, 80, 512) == 17
    # a Mamba2 chunk holding the checkpoint (256, on the unit's grid) runs in one piece
    assert mamba_aligned_split(req, 257, 0, 80, 512, 1, 16) == 257
    assert checkpoint_fits(0, 257, 256, 80, 1, 16)
    assert checkpoint_fits(16, 257, 256, 80, 1, 16) and not checkpoint_fits(16, 257, 256, 80, 1,
                                                                             80)
