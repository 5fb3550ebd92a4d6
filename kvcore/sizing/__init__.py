"""KV cache sizing: layers -> groups -> blocks, as vLLM 0.33 plans it.

Entry points:

    resolve_kv_cache_config(model=None, *, model_config=None, geometry=None, layers=None,
        kv_heads=None, head_dim=None, dtype=None, sliding_window=None, sliding_layers=None,
        attention_chunk_size=None, chunked_layers=None, gpu_memory_gib=None,
        gpu_memory_utilization=0.92, weights_gib=None, activation_gib=0.0, kv_cache_dtype="auto",
        block_size=16, max_model_len=None, max_num_batched_tokens=2048,
        max_concurrent_batches=2, num_blocks=None, tensor_parallel_size=1,
        disable_hybrid=False, pad_pages=True, enable_prefix_caching=True,
        check_memory=True) -> SizingResult

  ``result.config`` is a `kvcore.specs.KVCacheConfig`: ``num_blocks`` (block 0 is the null
  block), ``kv_cache_groups`` (tuple of `KVCacheGroupSpec`, each with its own spec and block
  size) and ``kv_cache_tensors``; ``result.config.block_size`` is the smallest group block size;
  ``result.bytes_per_block`` is what one block id costs in GPU memory (all layers of the widest
  group), e.g. for turning ``--capacity-gib`` into blocks: ``int(gib * 2**30) //
  result.bytes_per_block``. ``result.capacity`` holds num_blocks, kv_cache_tokens,
  max_concurrency and max_model_len_fits. Errors are `kvcore.errors.InputError` (exit 2).

Lower level: `get_kv_cache_groups(specs)`, `kv_cache_config_from_groups(groups, available)`,
`max_concurrency`, `kv_cache_tokens`, `estimate_max_model_len` (vLLM's per-layer binary search),
`check_enough_memory`.

Where kvcore follows which vLLM: grouping and the 1.5 bucketing threshold, Mamba page padding,
``num_blocks = available // bytes_per_block``, max concurrency, the memory check with the null
block held back and ``max_in_flight_tokens`` for sliding/chunked layers are 0.33's, and so is
the padding of attention pages that do not divide (``pad_pages=False``: 0.13's error). Tensors are
described 0.13-style (``KVCacheTensor(size, shared_by)``, tensor i shared by the i-th layer of
every group): the same bytes as 0.33's aliasing layout for uniform pages.
"""

from kvcore.sizing.config import (
    Capacity,
    NotEnoughMemory,
    blocks_per_request,
    bytes_per_block,
    check_enough_memory,
    estimate_max_model_len,
    estimate_max_model_len_from_groups,
    kv_cache_config_from_groups,
    kv_cache_tokens,
    max_concurrency,
)
from kvcore.sizing.grouping import PageSizeError, get_kv_cache_groups
from kvcore.sizing.resolve import resolve_kv_cache_config
from kvcore.sizing.result import SizingResult
from kvcore.sizing_context import DEFAULT_GPU_MEMORY_UTILIZATION

__all__ = ["DEFAULT_GPU_MEMORY_UTILIZATION", "Capacity", "NotEnoughMemory", "PageSizeError", "SizingResult", "blocks_per_request",
           "bytes_per_block", "check_enough_memory", "estimate_max_model_len",
           "estimate_max_model_len_from_groups", "get_kv_cache_groups",
           "kv_cache_config_from_groups", "kv_cache_tokens", "max_concurrency",
           "resolve_kv_cache_config"]
