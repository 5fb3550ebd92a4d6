"""What the CPU tier's manager (`manager.CPUOffloadingManager`) reports outward: its KV events
since the last drain (vLLM's `take_events`, read by the connectors once a step) and vLLM's
`get_stats().reduce()` (read by the live metrics, `kvcore/live/offload_metrics.py`, and the op
scripts' `stats`), under the metric names below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.offload.keys import TierEvent

if TYPE_CHECKING:
    from kvcore.offload.manager import CPUOffloadingManager

M_USAGE = "vllm:kv_offload_cpu_cache_usage_perc"
M_ALLOC = "vllm:kv_offload_cpu_allocation_size"
M_WRITE = "vllm:kv_offload_cpu_cache_write_usage_perc"
M_READ = "vllm:kv_offload_cpu_cache_read_usage_perc"
M_SKIPPED = "vllm:kv_offload_stores_skipped"


def drain_events(m: CPUOffloadingManager) -> list[TierEvent]:
    """The events since the last call. A quiet removal names only keys still absent (a
    retry may have stored the key again before the drain)."""
    if m.events is None:
        return []
    events, m.events = m.events, []
    out = []
    for ev in events:
        if ev.metadata_only:
            keys = [k for k in ev.keys if m.policy.get(k) is None]
            if not keys:
                continue
            ev = TierEvent(keys, ev.removed, True)
        out.append(ev)
    return out


def reduce_stats(m: CPUOffloadingManager) -> dict[str, int | float]:
    """vLLM's `get_stats().reduce()`: gauges now, the allocation sizes and skipped stores
    since the last call (which it resets)."""
    used = m.num_allocated - len(m.free_list) - m.num_evictable
    usage = used / m.num_chunks if m.num_chunks > 0 else 0.0
    out: dict[str, int | float] = {M_USAGE: usage}
    sizes = m.allocation_sizes
    if sizes:
        out[M_ALLOC + "_count"] = sum(sizes.values())
        out[M_ALLOC + "_sum"] = sum(n * k for n, k in sizes.items())
        m.allocation_sizes = {}
    write = m.num_write_pending / m.num_chunks if m.num_chunks > 0 else 0.0
    out[M_WRITE] = write
    out[M_READ] = max(usage - write, 0.0)
    if m.store_threshold >= 2:
        out[M_SKIPPED] = m.skipped
        m.skipped = 0
    return out
