"""Each manager kind's `tokens_to_skip_block` is the exact inverse of its
`get_num_skipped_tokens` at block granularity.

What `kvcore.quiet_steps` relies on: with ``s = get_num_skipped_tokens(done) // bs`` blocks
skipped at ``done`` processed tokens, a decoding request frees nothing in the group at any
``p`` of ``done .. edge - 1`` and frees block ``s`` at ``edge = tokens_to_skip_block(s)``
(-1: never). Both follow from one property, asserted here for every kind over small ranges of
block sizes, windows and chunks, every block index and every token count that reaches past the
edge: for all ``n >= 0`` and ``i >= 0``,

    get_num_skipped_tokens(n) // block_size > i   <=>   0 <= tokens_to_skip_block(i) <= n
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kvcore.block_pool import BlockPool
from kvcore.managers.base import SingleTypeKVCacheManager
from kvcore.managers.chunked_local import ChunkedLocalAttentionManager
from kvcore.managers.circular_buffer import CircularBufferManager
from kvcore.managers.cross_attention import CrossAttentionManager
from kvcore.managers.fine_full_attention import FineFullAttentionManager
from kvcore.managers.full_attention import FullAttentionManager
from kvcore.managers.mamba import MambaManager
from kvcore.managers.mamba_partial import FineMambaManager
from kvcore.managers.registry import FINE_MANAGERS, MANAGERS
from kvcore.managers.rswa import RSWAManager
from kvcore.managers.sliding_window import SlidingWindowManager
from kvcore.specs import (
    ChunkedLocalAttentionSpec,
    CircularBufferSpec,
    CrossAttentionSpec,
    FullAttentionSpec,
    KVCacheSpec,
    MambaSpec,
    RSWASpec,
    SlidingWindowSpec,
)

BLOCK_SIZES = range(1, 7)
PARAMS = range(1, 14)           # windows, chunks (a kind without one: one pass)
BLOCKS = range(6)               # block indices asked about
TOKENS = 100                    # token counts 0..99: past every edge above (asserted)


def _mamba(bs: int, _: int) -> MambaSpec:
    return MambaSpec(bs, shapes=((4,),), dtypes=("float32",))


# kind -> (its spec from a block size and a window or chunk, whether that second one matters)
KINDS: dict[type[SingleTypeKVCacheManager], tuple[Callable[[int, int], KVCacheSpec], bool]] = {
    FullAttentionManager: (lambda bs, _: FullAttentionSpec(bs), False),
    FineFullAttentionManager: (lambda bs, _: FullAttentionSpec(bs), False),
    SlidingWindowManager: (lambda bs, w: SlidingWindowSpec(bs, sliding_window=w), True),
    ChunkedLocalAttentionManager: (
        lambda bs, c: ChunkedLocalAttentionSpec(bs, attention_chunk_size=c), True),
    MambaManager: (_mamba, False),
    FineMambaManager: (_mamba, False),
    CrossAttentionManager: (lambda bs, _: CrossAttentionSpec(bs), False),
    # (R-SWA frees the gap past the prompt by the prompt's length, which a decode window does
    # not know: it states no inverse, and its steps are never quiet; a ring skips nothing)
    RSWAManager: (lambda bs, w: RSWASpec(bs, rswa_window=w), True),
    CircularBufferManager: (lambda bs, _: CircularBufferSpec(bs), False),
}


def make(kind: type[SingleTypeKVCacheManager], bs: int, param: int) -> SingleTypeKVCacheManager:
    return kind(KINDS[kind][0](bs, param), BlockPool(4, True, bs), True, 0)


def test_every_registered_kind_is_checked():
    # a kind registered later fails here until it is added to KINDS (and states its inverse)
    assert set(MANAGERS.values()) | set(FINE_MANAGERS.values()) == set(KINDS)


@pytest.mark.parametrize("kind", list(KINDS), ids=lambda k: k.__name__)
def test_tokens_to_skip_block_inverts_get_num_skipped_tokens(kind):
    for bs in BLOCK_SIZES:
        for param in PARAMS if KINDS[kind][1] else (1,):
            m = make(kind, bs, param)
            for i in BLOCKS:
                edge = m.tokens_to_skip_block(i)
                assert edge == -1 or 0 <= edge < TOKENS, (kind, bs, param, i, edge)
                for n in range(TOKENS):
                    skips = m.get_num_skipped_tokens(n) // bs > i
                    assert skips == (0 <= edge <= n), (kind, bs, param, i, n, edge)


def test_the_edges_by_hand():
    """A few edges worked out by hand: a block, a token or a chunk off shows here by value."""
    swa = make(SlidingWindowManager, 2, 4)     # skipped max(0, n - 3)
    assert [swa.tokens_to_skip_block(i) for i in range(4)] == [5, 7, 9, 11]
    chunked = make(ChunkedLocalAttentionManager, 4, 8)  # skipped n // 8 * 8
    assert [chunked.tokens_to_skip_block(i) for i in range(4)] == [8, 8, 16, 16]
    odd = make(ChunkedLocalAttentionManager, 3, 5)      # chunk edges 5, 10, 15 over blocks of 3
    assert [odd.tokens_to_skip_block(i) for i in range(5)] == [5, 10, 10, 15, 15]
    mamba = make(MambaManager, 4, 0)           # skipped n - 1
    assert [mamba.tokens_to_skip_block(i) for i in range(3)] == [5, 9, 13]
    for kind in (FullAttentionManager, FineFullAttentionManager, CrossAttentionManager,
                 RSWAManager, CircularBufferManager):
        assert make(kind, 4, 0).tokens_to_skip_block(0) == -1
