"""Single-type managers for local attention and recurrent state (reference §4.2, §10.3).

vLLM's test_single_type_kv_cache_manager.py cases, in our words: the chunked-local and
sliding-window lookup tables, their skip tables, get_num_blocks_to_allocate 20 / 15; then the
Mamba latest-state lookup and allocation, and cross-attention never caching.
"""

from __future__ import annotations

import random

import pytest

from kvcore.block_pool import BlockPool
from kvcore.managers.chunked_local import ChunkedLocalAttentionManager
from kvcore.managers.cross_attention import CrossAttentionManager
from kvcore.managers.mamba import MambaManager
from kvcore.managers.registry import get_manager_class
from kvcore.managers.sliding_window import SlidingWindowManager
from kvcore.specs import ChunkedLocalAttentionSpec, CrossAttentionSpec, MambaSpec, SlidingWindowSpec

CHUNKED = ChunkedLocalAttentionSpec(2, 1, 1, "float32", attention_chunk_size=4)
SWA = SlidingWindowSpec(2, 1, 1, "float32", sliding_window=4)


def pool(n: int = 2000) -> BlockPool:
    return BlockPool(n, True, 2)


def lookup(manager_cls, spec, pattern, tail=0):
    """Cache block 10+i wherever pattern[i] is True; look up a prefix of len*bs+tail tokens."""
    p = pool()
    hashes = [f"h{i}".encode() for i in range(len(pattern))]
    for i, cached in enumerate(pattern):
        if cached:
            p.cached_block_hash_to_block.insert(hashes[i], 0, p.blocks[10 + i])
    blocks, length = manager_cls.find_longest_cache_hit(
        hashes, len(pattern) * spec.block_size + tail, [0], p, spec,
        alignment_tokens=spec.block_size)
    assert length == len(blocks[0]) * spec.block_size
    return blocks[0], p


@pytest.mark.parametrize("pattern,tail,expected", [
    ([True], 0, 1), ([True], 1, 1), ([True, False], 0, 2), ([True, False], 1, 2),
    ([True, True], 0, 2), ([True, True, False], 0, 2), ([True, True, True], 0, 3),
    ([True, True, True, False], 0, 4),
])
def test_chunked_local_possible_cached_prefix(pattern, tail, expected) -> None:
    blocks, _ = lookup(ChunkedLocalAttentionManager, CHUNKED, pattern, tail)
    assert len(blocks) == expected
    assert all(b.is_null for b in blocks[:(expected - 1) // 2])


@pytest.mark.parametrize("suffix,tail,expected", [
    ([True], 1, 9), ([False], 1, 8), ([True, True], 1, 10), ([True, False], 0, 10),
    ([True, False], 1, 10), ([False, True], 0, 10), ([False, True], 1, 10),
    ([False, False], 0, 10), ([False, False], 1, 10),
])
def test_chunked_local_after_eight_random_blocks(suffix, tail, expected) -> None:
    rng = random.Random(len(suffix) * 10 + tail)
    pattern = [rng.random() < 0.5 for _ in range(8)] + suffix
    blocks, _ = lookup(ChunkedLocalAttentionManager, CHUNKED, pattern, tail)
    assert len(blocks) == expected
    assert all(b.is_null for b in blocks[:(expected - 1) // 2])
    # Out-of-chunk positions are nulls; the first in-chunk block is the real cached one.
    if expected == 9:
        assert blocks[8].block_id == 18


T, F = True, False


@pytest.mark.parametrize("pattern,expected", [
    ([F] * 10, 0), ([T], 1), ([T, F], 1), ([T, T], 2), ([T, T, F], 2), ([T, T, T], 3),
    ([T, T, T, F], 3), ([T, T, F, T, F, F, T, T, F, T, T, T], 12),
    ([T, T, F, T, F, F, T, T, F, F, F], 8), ([T, T, F, T, F, F, T, T, F, F, F, T], 8),
])
def test_sliding_window_possible_cached_prefix(pattern, expected) -> None:
    blocks, _ = lookup(SlidingWindowManager, SWA, pattern)
    assert len(blocks) == expected
    if expected >= 2:
        assert all(b.is_null for b in blocks[:-2])
        assert [b.block_id for b in blocks[-2:]] == [10 + expected - 2, 10 + expected - 1]


def held_table(manager, p: BlockPool, rid="r"):
    table = [p.blocks[i] for i in range(1000, 1011)]
    for b in table:
        p.free_block_queue.remove(b)
        b.ref_cnt = 1
    manager.req_to_blocks[rid] = list(table)
    return table


@pytest.mark.parametrize("computed,nulls", [(0, 0), (4, 2), (6, 2), (12, 6)])
def test_chunked_local_remove_skipped_blocks(computed, nulls) -> None:
    p = pool()
    m = ChunkedLocalAttentionManager(CHUNKED, p, True, 0)
    table = held_table(m, p)
    free_before = p.get_num_free_blocks()
    m.remove_skipped_blocks("r", computed)
    got = m.req_to_blocks["r"]
    assert [b.is_null for b in got] == [True] * nulls + [False] * (11 - nulls)
    assert got[nulls:] == table[nulls:]
    assert p.get_num_free_blocks() == free_before + nulls


@pytest.mark.pure_python   # patches the pool's free_blocks
def test_sliding_window_remove_skipped_blocks_sequence() -> None:
    p = pool()
    m = SlidingWindowManager(SWA, p, True, 0)
    held_table(m, p)
    order: list[int] = []
    real_free = p.free_blocks
    p.free_blocks = lambda blocks: (order.extend(b.block_id for b in blocks),  # type: ignore
                                    real_free(blocks))[1]
    expected_nulls = {4: 0, 5: 1, 6: 1, 7: 2, 11: 4}
    for computed, nulls in expected_nulls.items():
        m.remove_skipped_blocks("r", computed)
        assert sum(b.is_null for b in m.req_to_blocks["r"]) == nulls
        assert all(b.is_null for b in m.req_to_blocks["r"][:nulls])
    # Tokens 0-7 left the window at 11 computed: 1003 is freed before 1002.
    assert order == [1000, 1001, 1003, 1002]


@pytest.mark.parametrize("manager_cls,spec", [(SlidingWindowManager, SWA),
                                              (ChunkedLocalAttentionManager, CHUNKED)])
def test_get_num_blocks_to_allocate(manager_cls, spec) -> None:
    p = pool(100)
    m = manager_cls(spec, p, True, 0)
    hits = p.blocks[1:11]  # ten cached blocks sitting in the free queue (ref 0)
    assert m.get_num_blocks_to_allocate("a", 20 * 2, hits) == 20
    hits = [p.null_block] * 5 + p.blocks[1:6]
    assert m.get_num_blocks_to_allocate("b", 20 * 2, hits) == 15


def test_chunked_admission_cap_and_skips() -> None:
    # one chunk plus the tokens in flight, capped by max_model_len
    assert ChunkedLocalAttentionManager.admission_cap(CHUNKED, 10, 1000) == 7
    assert ChunkedLocalAttentionManager.admission_cap(CHUNKED, 10, 6) == 3
    m = ChunkedLocalAttentionManager(ChunkedLocalAttentionSpec(4, attention_chunk_size=8),
                                     pool(), True, 0)
    assert [m.get_num_skipped_tokens(n) for n in (13, 8, 7)] == [8, 8, 0]
    with pytest.raises(ValueError):
        ChunkedLocalAttentionManager.find_longest_cache_hit([], 8, [0], pool(), CHUNKED,
                                                            drop_eagle_block=True)


MAMBA = MambaSpec(2, shapes=((4,),), dtypes=("float32",))


def test_registry_maps_new_specs() -> None:
    assert get_manager_class(CHUNKED) is ChunkedLocalAttentionManager
    assert get_manager_class(MAMBA) is MambaManager
    assert get_manager_class(CrossAttentionSpec(2)) is CrossAttentionManager


def test_mamba_lookup_returns_the_latest_state() -> None:
    blocks, p = lookup(MambaManager, MAMBA, [T, T, F, T, F])
    assert [b.block_id for b in blocks] == [0, 0, 0, 13]  # nulls, then the state after block 3
    assert all(b.is_null for b in blocks[:3])
    blocks, _ = lookup(MambaManager, MAMBA, [F, F])
    assert blocks == []
    # With a 4-token scheduler alignment, a state ending at 6 tokens is passed over.
    p = pool()
    hashes = [b"a", b"b", b"c"]
    p.cached_block_hash_to_block.insert(b"c", 0, p.blocks[30])
    p.cached_block_hash_to_block.insert(b"b", 0, p.blocks[20])
    got, length = MambaManager.find_longest_cache_hit(hashes, 6, [0], p, MAMBA,
                                                      alignment_tokens=4)
    assert length == 4 and got[0][-1].block_id == 20


def test_mamba_keeps_at_most_two_states() -> None:
    p = pool(50)
    m = MambaManager(MAMBA, p, True, 0)
    assert m.get_num_blocks_to_allocate("r", 7, []) == 1  # one running state, not 4 blocks
    new = m.allocate_new_blocks("r", 7)
    assert len(new) == 1
    assert [b.is_null for b in m.req_to_blocks["r"]] == [True, True, True, False]
    m.remove_skipped_blocks("r", 7)
    m.allocate_new_blocks("r", 9)  # next step: state moves to block 4
    held = [b for b in m.req_to_blocks["r"] if not b.is_null]
    assert len(held) == 2  # the previous state stays until the next step's skip
    m.remove_skipped_blocks("r", 9)
    held = [b for b in m.req_to_blocks["r"] if not b.is_null]
    assert len(held) == 1 and m.req_to_blocks["r"][4] is held[0]
    free_before = p.get_num_free_blocks()
    m.free("r")
    assert p.get_num_free_blocks() == free_before + 1


def test_cross_attention_never_caches() -> None:
    spec = CrossAttentionSpec(2)
    p = pool(20)
    m = CrossAttentionManager(spec, p, True, 0)
    assert not m.prefix_cacheable and m.uses_encoder_tokens
    with pytest.raises(NotImplementedError):
        CrossAttentionManager.find_longest_cache_hit([b"x"], 2, [0], p, spec)
    with pytest.raises(AssertionError):
        m.add_local_computed_blocks("r", [p.blocks[3]], 2)
    m.add_local_computed_blocks("r", [], 0)
    assert len(m.allocate_new_blocks("r", 5)) == 3


def test_kvcli_script_runs_a_full_plus_mamba_group() -> None:
    """No oracle covers Mamba; these are the answers our latest-state rules give, by hand."""
    from pathlib import Path

    from kvcore.engine.op_script import load_script
    from kvcore.engine.script_runner import run_ops

    path = Path(__file__).resolve().parent / "data" / "mamba" / "hybrid.ops.jsonl"
    cfg, ops = load_script(str(path))
    lines = list(run_ops(cfg, ops, str(path)))
    a_new, _, _, a_dec17, _a_free, b_new, c_new, c_prefill = lines[:8]
    # 14 prompt tokens: 4 full-attention blocks; one Mamba state in block index 3 (tokens 12-15)
    assert a_new["block_table"] == [[1, 2, 3, 4], [0, 0, 0, 5]]
    # token 17 opens block index 4: a new running state; the previous one stays this step
    assert a_dec17["block_table"] == [[1, 2, 3, 4, 6], [0, 0, 0, 5, 7]]
    # b shares 16 tokens: the full blocks, and the state block 5 registered at exactly 16 tokens
    assert b_new["hit"] == 16
    assert b_new["hit_block_ids"] == [[1, 2, 3, 4], [0, 0, 0, 5]]
    # c shares 8 tokens with full attention, but no state ends at 8 tokens: no hit at all
    assert c_new["hit"] == 0
    # a 1-token chunk then 8 more: the old state (block 9) is kept, nulls up to the new one
    assert c_prefill["block_table"] == [[8, 10, 11], [9, 0, 12]]
    summary = lines[-1]
    # hash keys: 4 full-attention blocks (c re-registers two of the same keys) + 1 state
    assert summary["free_blocks"] == 39 and summary["cached_block_hashes"] == 5
