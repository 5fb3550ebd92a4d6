"""vLLM 0.33's rule for `prefix_cache_retention_interval` (CacheConfig), checked at start-up by
the coordinator and by a replay's start-up (`kvcore.engine.startup`)."""

from __future__ import annotations

from kvcore.specs import MambaSpec, SlidingWindowSpec


def retains(specs: list) -> bool:
    """Whether retention acts on these groups' specs: only sliding-window and Mamba groups
    keep sparse checkpoints (full-attention and chunked-local groups cache every block)."""
    return any(isinstance(s, (SlidingWindowSpec, MambaSpec)) for s in specs)


def check_retention_interval(interval: int | None, scheduler_block_size: int,
                             specs: list) -> None:
    """vLLM's rule for prefix_cache_retention_interval: None (dense) or 0 always; a positive
    value only with a sliding-window (or Mamba) group, and a multiple of the scheduler block
    size. Raises ValueError with the numbers."""
    if interval is None:
        return
    if not retains(specs):
        if interval == 0:
            return
        raise ValueError(f"prefix_cache_retention_interval {interval} has no effect: no "
                         "sliding-window or Mamba KV cache group (set it to 0)")
    if interval < 0 or interval % scheduler_block_size != 0:
        raise ValueError(f"prefix_cache_retention_interval {interval} must be >= 0 and a "
                         f"multiple of the scheduler block size {scheduler_block_size}")


def dense_retention_note(interval: int | None, specs: list, where: str = "") -> str | None:
    """The warning for dense retention (None) where it changes nothing: vLLM accepts it
    without a sliding-window or Mamba group, whose blocks alone it would keep densely.
    ``where``: the mark of the config line that set it (`refusal.where_set`)."""
    if interval is not None or retains(specs):
        return None
    return (f"option prefix_cache_retention_interval dense{where} has no effect: no "
            "sliding-window or Mamba KV cache group (full-attention and chunked-local groups "
            "cache every block already)")
