"""Dev tool (not a test; imported by the recorders in mla/, sliding/ and mamba/ under the
oracle's vLLM): the part of a VllmConfig vLLM 0.33's KV cache planning reads, as a namespace,
and the planning answers the recorders keep. The recorders run vLLM's own functions over it
instead of building a whole engine."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any


def planning_config(*, max_model_len: int, max_num_batched_tokens: int,
                    max_in_flight_tokens: int, retention: int | None = None,
                    mamba_cache_mode: str = "align") -> Any:
    """What `kv_cache_planning` reads: no hybrid-manager switch-off, no block override, the
    layout vLLM resolves on CUDA (LBNHC), no decode context parallelism."""
    from vllm.v1.kv_cache_layout import KVCacheLayout

    return NS(scheduler_config=NS(disable_hybrid_kv_cache_manager=False,
                                  max_num_batched_tokens=max_num_batched_tokens),
              cache_config=NS(num_gpu_blocks_override=None,
                              prefix_cache_retention_interval=retention,
                              mamba_cache_mode=mamba_cache_mode,
                              get_resolved_kv_cache_layout=lambda: KVCacheLayout.LBNHC),
              model_config=NS(max_model_len=max_model_len),
              attention_config=NS(hisparse_config=None),
              max_in_flight_tokens=max_in_flight_tokens,
              parallel_config=NS(decode_context_parallel_size=1))


def plan(c: Any, specs: dict, available: int) -> tuple[list, Any, dict]:
    """vLLM's groups and KVCacheConfig for ``specs`` in ``available`` bytes, and the numbers
    the recorders keep: blocks, max concurrency, capacity in tokens, the largest max_model_len
    that fits."""
    from vllm.v1.core import kv_cache_planning as P
    from vllm.v1.core.kv_cache_planning import (
        DefaultKVCacheConfigBuilder,
        _estimate_max_model_len_from_groups,
        _pool_bytes_per_block,
    )
    from vllm.v1.core.kv_cache_utils import (
        get_kv_cache_capacity,
        get_max_concurrency_for_kv_cache_config,
    )

    groups = P.get_kv_cache_groups(c, dict(specs))
    kc = P.get_kv_cache_config_from_groups(c, groups, available)
    tokens, _ = get_kv_cache_capacity(c, kc)
    est = _estimate_max_model_len_from_groups(DefaultKVCacheConfigBuilder(), c, groups,
                                              available - _pool_bytes_per_block(c, groups))
    return groups, kc, {"num_blocks": kc.num_blocks,
                        "max_concurrency": get_max_concurrency_for_kv_cache_config(c, kc),
                        "kv_cache_tokens": tokens, "max_model_len_fits": est}
