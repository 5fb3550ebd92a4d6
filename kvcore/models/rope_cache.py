"""One RoPE `cos_sin_cache` as vLLM 0.33's `get_rope` builds it (`kvcore.models.buffers`): its
size and what its process-wide cache tells it apart by, so that a draft built beside its target
is known to share the target's object or to hold one of its own."""

from __future__ import annotations

from typing import NamedTuple

from kvcore.specs import DTYPE_BYTES


class RopeCache(NamedTuple):
    rows: int           # positions x the factor the type scales them by
    dim: int            # rotary dim
    dtype: str
    key: str            # get_rope's key but the positions: head size, rotary dim, parameters
    positions: int      # the max_position passed to get_rope
    # rows a position, where max_position alone sizes the cache (vLLM's _CACHE_ONLY_ROPE_TYPES:
    # default, linear, llama3, ntk, proportional), else None: speculative.py raises a draft's
    # max_position_embeddings to the target's max_model_len only then
    per_position: float | None
    # the layer kinds whose layers build it, where the config gives a RoPE a layer type (a
    # pipeline stage holds its own layers' caches: Step-3.5's); () where every layer does
    kinds: tuple[str, ...] = ()
    # the layers building it, where layers of one kind build different ones (RNJ-1's
    # ``sliding_attention`` and ``full_attention`` layers, both full: a RoPE a layer type);
    # () where `kinds` tells (a stage holds a cache where it holds one of these layers)
    layers: tuple[int, ...] = ()

    @property
    def nbytes(self) -> int:
        return self.rows * self.dim * DTYPE_BYTES[self.dtype]

    def identity(self) -> tuple[str, int, str]:
        """What get_rope's cache compares (two equal: one object, one buffer)."""
        return self.key, self.positions, self.dtype


def served_in(caches: tuple[RopeCache, ...], config: str, served: str) -> tuple[RopeCache, ...]:
    """`caches` of a model whose config's dtype is `config`, served in `served` (``--dtype``):
    get_rope makes a cache in the default dtype vLLM builds the model under, the served one,
    but for those made in a fixed one (float32: gpt-oss's, Domyn Edge's, DeepSeek-V4's)
    (tests/data/weights_census/unread_keys/, --dtype float32)."""
    return tuple(c._replace(dtype=served) if c.dtype == config else c for c in caches)

