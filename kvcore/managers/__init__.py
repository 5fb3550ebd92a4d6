"""Single-type KV cache managers: one per KV cache group (see `base.py`), chosen by spec type
through `registry.py`."""

from kvcore.managers.base import SingleTypeKVCacheManager
from kvcore.managers.full_attention import FullAttentionManager
from kvcore.managers.registry import get_manager_class, register_group_type, register_manager
from kvcore.managers.sliding_window import SlidingWindowManager

__all__ = [
           "FullAttentionManager",
           "SingleTypeKVCacheManager",
           "SlidingWindowManager",
           "get_manager_class",
           "register_group_type",
           "register_manager",
]
