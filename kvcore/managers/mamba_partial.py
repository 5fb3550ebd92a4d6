"""A Mamba group's part in partial hash hits (vLLM 0.33, `--prefix-match-unit` finer than the
Mamba block, the coordinator's `enable_partial_hash_hits`).

A Mamba block holds one state, the request's state at some position inside or at the end of
the block. With hits at every hash boundary (`kvcore.managers.fine_lookup.mamba_hit`):

* the producer: when a prefill chunk ends on the prompt's last hash boundary (``num_prompt -
  1`` floored to the hash block, where the scheduler stops it: `kvcore.engine.mamba_split`),
  `_cache_partial_tail` keys the running state's block there (`BlockPool.cache_partial_block`,
  `kvcore.partial_hashes`). Inside a block the request will go on writing that state, so its
  next allocation copies it out first (`copy_on_write`, a running request: the keys move to the
  copy, `move_block_hashes`, the table stays; the copy counts as cached in this step);
* a hit inside a block: the new request's table gets a private copy of the hit block in its
  place (`_apply_cow`), its cached count stopping before it;
* a Mamba2 checkpoint written from inside a chunk sits on the hash grid: its block is re-keyed
  there (``replace_existing_hashes``), or, when no later hit can reach it (not the prompt's,
  not retained, not the junction), evicted;
* caching is vLLM's template (every non-null block the retention mask keeps), and no
  rounding of the cacheable prefix (`HybridKVCacheCoordinator._align_cacheable`).

Both ends of a copy are held until the scheduler frees them at the end of the step
(`SingleTypeKVCacheManager.take_cow_blocks`, vLLM's `Scheduler._free_cow_retained_blocks`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.block import KVCacheBlock
from kvcore.request import Request
from kvcore.specs import cdiv

if TYPE_CHECKING:
    from kvcore.managers.mamba import MambaManager
    from kvcore.partial_hashes import PartialHashes


def copy_on_write(m: MambaManager, request_id: str, hit: tuple[int, KVCacheBlock],
                  copy: KVCacheBlock) -> None:
    """The copy of a state inside a block (vLLM's branch of `MambaManager.allocate_new_blocks`):
    a running request (its own tail) stays on the source and the cache's keys move to the copy;
    a new one (a hit) has the copy put in its table in the hit block's place."""
    index, source = hit
    if request_id in m._allocated:
        blocks = m.req_to_blocks[request_id]
        assert blocks[index] is source
        _partial(m).move(source, copy)
        source.ref_cnt += 1
        if copy.block_hash is not None:
            # filled by this step's copy only: no hit on it before the next step
            m._cached_this_step.add(copy.block_hash)
    else:
        blocks = m.req_to_blocks[request_id]
        assert blocks[index] is source and source.ref_cnt > 0
        blocks[index] = copy
        copy.ref_cnt += 1
    m.pending_cow.append((source, copy))


def _partial(m: MambaManager) -> PartialHashes:
    partial = m.block_pool.partial
    assert partial is not None
    return partial


def after_caching(m: MambaManager, request: Request, num_tokens: int, before: int) -> None:
    """The rest of vLLM's `MambaManager.cache_blocks` in align mode with partial hash hits,
    once the template cached the blocks from ``before`` on: the key inside a block, and every
    state keyed in this step noted (no hit on it before the next step)."""
    rid = request.request_id
    after = m.num_cached_block.get(rid, 0)
    h = _cache_partial_tail(m, request, num_tokens)
    if h is not None:
        m._cached_this_step.add(h)
    if after > before:
        blocks = m.req_to_blocks[rid]
        for i in range(before, after):
            bh = blocks[i].block_hash
            if bh is not None and not blocks[i].is_null:
                m._cached_this_step.add(bh)


def _retained(m: MambaManager, block: int) -> bool:
    """Whether the retention interval alone keeps the state at the end of ``block`` (vLLM's
    reachable_block_mask for that block without reachable boundaries)."""
    retention = m.retention_interval
    if retention is None:
        return True
    if retention == 0:
        return False
    per_segment = retention // m.block_size
    return per_segment <= 1 or (block + 1) % per_segment == 0


def _cache_partial_tail(m: MambaManager, request: Request, num_tokens: int) -> bytes | None:
    """vLLM's `MambaManager._cache_partial_tail_block`: the key it added, or None."""
    bs = m.block_size
    partial = _partial(m)
    blocks = m.req_to_blocks.get(request.request_id, [])
    checkpoint = m._checkpoints.get(request.request_id)
    if checkpoint is not None:
        position, index = checkpoint
        blk = blocks[index]
        align = m.cache_hit_alignment_tokens
        of_prompt = position == max((request.num_prompt_tokens - 1) // align * align, 0)
        retained = position % bs == 0 and _retained(m, position // bs - 1)
        if not of_prompt and not retained and position != request.shared_prefix_boundary:
            # a transient state: its slot is overwritten, no key of it is any use
            partial.evict(blk)
            return None
        if partial.num_tokens(blk, (index + 1) * bs) == position:
            return None
        return partial.cache_partial_block(request, blk, position, m.kv_cache_group_id, bs,
                                           (index + 1) * bs, replace=True)
    unit = m.block_pool.hash_block_size
    if num_tokens <= 0 or num_tokens % unit:
        return None
    if num_tokens != max((request.num_prompt_tokens - 1) // unit * unit, 0):
        return None     # only the prompt's last hash boundary (no shared-prefix checkpoints)
    index = cdiv(num_tokens, bs) - 1
    if index >= len(blocks) or blocks[index].is_null:
        return None
    source = blocks[index]
    if partial.num_tokens(source, (index + 1) * bs) == num_tokens:
        return None     # keyed there already (a hit, an earlier step)
    h = partial.cache_partial_block(request, source, num_tokens, m.kv_cache_group_id, bs,
                                    (index + 1) * bs)
    if h is not None and num_tokens % bs:
        m.partial_hits[request.request_id] = (index, source)
        m.num_cached_block[request.request_id] = index
    return h
