"""The spec of a whole KV cache group where it is not one layer's: `UniformTypeKVCacheSpecs`
(vLLM's `kv_cache_interface.py`: layers of one kind whose sizes differ, sharing one block table),
and `kind_of`, the kind name a group's spec goes by (a uniform-type group by its layers' kind).

Apart from `kvcore.specs` (one layer's specs): a uniform-type spec is made only when the sizing
groups layers (`kvcore.sizing.grouping`), out of the layer specs there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kvcore.sizing_context import SizingContext
from kvcore.specs import (
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    KVCacheGroupSpec,
    KVCacheSpec,
    MambaSpec,
    SlidingWindowSpec,
    cdiv,
)


@dataclass(frozen=True, slots=True)
class UniformTypeKVCacheSpecs(KVCacheSpec):
    """Layers of one kind (same block size, same token slots) but different sizes, in ONE group.

    E.g. full-attention layers with head sizes 128 and 64. A block then costs the sum of the
    member pages; each layer keeps its own tensor.
    """

    kv_cache_specs: dict[str, KVCacheSpec] = field(default_factory=dict, hash=False)

    kind = "uniform_type"

    @property
    def first_spec(self) -> KVCacheSpec:
        return next(iter(self.kv_cache_specs.values()))

    @property
    def page_size_bytes(self) -> int:
        return sum(s.page_size_bytes for s in self.kv_cache_specs.values())

    def max_memory_usage_pages(self, ctx: SizingContext) -> int:
        return max(cdiv(s.max_memory_usage_bytes(ctx), s.page_size_bytes)
                   for s in self.kv_cache_specs.values())

    def max_memory_usage_bytes(self, ctx: SizingContext) -> int:
        return self.max_memory_usage_pages(ctx) * self.page_size_bytes

    @staticmethod
    def same_type(a: KVCacheSpec, b: KVCacheSpec) -> bool:
        """Whether two layers always need the same number of token slots."""
        if a.block_size != b.block_size:
            return False
        if isinstance(a, FullAttentionSpec):
            return isinstance(b, FullAttentionSpec)
        if isinstance(a, SlidingWindowSpec):
            return isinstance(b, SlidingWindowSpec) and a.sliding_window == b.sliding_window
        if isinstance(a, ChunkedLocalAttentionSpec):
            return (isinstance(b, ChunkedLocalAttentionSpec)
                    and a.attention_chunk_size == b.attention_chunk_size)
        if isinstance(a, MambaSpec):
            return isinstance(b, MambaSpec) and all(getattr(a, f) == getattr(b, f) for f in (
                "page_size_bytes", "num_speculative_blocks", "num_prefill_checkpoint_blocks",
                "prefill_checkpoint_alignment"))
        return type(a) is type(b)

    @classmethod
    def from_specs(cls, specs: dict[str, KVCacheSpec]) -> UniformTypeKVCacheSpecs | None:
        first = next(iter(specs.values()))
        if all(cls.same_type(first, s) for s in specs.values()):
            return cls(block_size=first.block_size, kv_cache_specs=dict(specs))
        return None


def kind_of(spec: Any) -> str:
    """The group type name op scripts and `kvcli config` use (``full``, ``sliding_window``...)."""
    if isinstance(spec, UniformTypeKVCacheSpecs):
        return kind_of(spec.first_spec)
    return spec.kind


def scheduler_groups(groups: list[KVCacheGroupSpec]) -> list[KVCacheGroupSpec]:
    """The groups as vLLM's scheduler gets them (`generate_scheduler_kv_cache_config`): a
    uniform-type group by its first layer's spec, all its layers holding the same blocks (an
    EAGLE draft of another head size beside a target, say: a manager was asked for the group
    spec, and failed)."""
    return [KVCacheGroupSpec(g.layer_names, g.kv_cache_spec.first_spec)
            if isinstance(g.kv_cache_spec, UniformTypeKVCacheSpecs) else g for g in groups]


def hashing_block_sizes(specs: list[KVCacheSpec]) -> list[int]:
    """The block sizes the hash block divides: the prefix-cacheable groups' (a circular buffer's
    ring covers no token range), all when none is (vLLM 0.33's `get_hash_block_size`)."""
    return [s.block_size for s in specs if s.prefix_cacheable] or [s.block_size for s in specs]
