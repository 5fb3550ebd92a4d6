"""What the engine allocates: vLLM's `KVCacheGroupSpec`, `KVCacheTensor` and `KVCacheConfig`.

The records of `vllm/v1/kv_cache_interface.py` (0.33) around the specs; `kvcore.specs`
re-exports them. `kvcore.sizing` builds a `KVCacheConfig` from a model's layers and a memory
budget; `KVCacheManager` reads its ``num_blocks`` and ``kv_cache_groups`` (or those of a
`KVCachePoolConfig`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvcore.specs import KVCacheSpec


@dataclass(frozen=True, slots=True)
class KVCacheGroupSpec:
    """Layers that share one block table (and one manager)."""

    layer_names: tuple[str, ...]
    kv_cache_spec: KVCacheSpec


@dataclass(frozen=True, slots=True)
class KVCacheTensor:
    """One physical buffer of ``size`` bytes; ``shared_by`` lists the layers (one per group at
    most) that view it. A block id means "page b" of this buffer for whichever group owns it."""

    size: int
    shared_by: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class KVCacheConfig:
    """What the engine allocates: ``num_blocks`` (block 0 being the null block), the tensors and
    the groups (each with its own block table and manager)."""

    num_blocks: int
    kv_cache_tensors: tuple[KVCacheTensor, ...]
    kv_cache_groups: tuple[KVCacheGroupSpec, ...]

    @property
    def block_size(self) -> int:
        """The smallest block size among the groups (they differ only after page unification)."""
        return min((g.kv_cache_spec.block_size for g in self.kv_cache_groups), default=0)


@dataclass(slots=True)
class KVCachePoolConfig:
    """What `KVCacheManager` needs of vLLM's `KVCacheConfig`: the pool size and the groups
    sharing it (`KVCacheConfig`, with its tensors, works as well). `kvcore.kv_cache_manager`
    re-exports it."""

    num_blocks: int
    kv_cache_groups: list[KVCacheGroupSpec]
