"""Whether a request can ever run in the pool: the check before it is admitted.

A prompt at `max_model_len` or longer never runs. Otherwise the request needs, at some position
it surely computes, more blocks at once than the pool has (`held_at_peak`). That is exact when
every group is full attention; with windowed groups it is a lower bound, and Mamba groups are
not counted: a head that an empty pool still refuses is caught when that happens
(`kvcore.engine.stall`).
"""

from __future__ import annotations

from typing import Any

from kvcore.specs import ChunkedLocalAttentionSpec, FullAttentionSpec, SlidingWindowSpec, cdiv

# The groups whose holding follows from a request's length alone.
LENGTH_SPECS = (FullAttentionSpec, SlidingWindowSpec, ChunkedLocalAttentionSpec)


def length_managers(kvm: Any) -> list[Any]:
    """The single-type managers of `kvm` whose groups are in `LENGTH_SPECS`."""
    return [m for m in kvm.coordinator.single_type_managers
            if isinstance(m.kv_cache_spec, LENGTH_SPECS)]


def held_at_peak(managers: list[Any], lo: int, hi: int) -> tuple[int, int]:
    """The most blocks a request holds at once in these groups (and the position), over some of
    the positions it surely computes one by one or last in its prefill: `lo` (its prompt's last
    token, never a hit) to `hi` (its last computed token). At position q a group holds a block
    per block_size tokens up to q, less the blocks before what q reads
    (`get_num_skipped_tokens`: vLLM frees them early); all groups share the pool and hold
    theirs at once. Any subset of the positions gives a lower bound of the peak, never a false
    "can never run": `hi`, the last block of positions before it (a window's count cycles with
    its block size), and each local chunk's last position (its peak). Full attention only
    grows: with it alone the peak is at `hi`."""
    qs = {hi}
    span = max((m.block_size for m in managers
                if isinstance(m.kv_cache_spec, SlidingWindowSpec)), default=1)
    qs.update(range(max(lo, hi - span + 1), hi))
    for m in managers:
        chunk = getattr(m, "attention_chunk_size", 0)
        if chunk and (hi + 1) // chunk * chunk - 1 >= lo:
            qs.add((hi + 1) // chunk * chunk - 1)
    best = (-1, hi)
    for q in sorted(qs):
        if q < 0:
            continue
        held = sum(cdiv(q + 1, m.block_size) - m.get_num_skipped_tokens(q) // m.block_size
                   for m in managers)
        best = max(best, (held, q))
    return max(best[0], 0), best[1]


def never_fits(ctx: Any, tr: Any) -> str | None:
    """Why `tr` can never run in `ctx`'s pool (None if it can): a prompt at max_model_len or
    longer, or more blocks at once than the pool has, for its longest computed sequence
    (engine) or its prompt (cache)."""
    cfg = ctx.cfg
    if cfg.max_model_len is not None and tr.prompt_len >= cfg.max_model_len:
        return f"prompt of {tr.prompt_len} tokens >= max_model_len {cfg.max_model_len}"
    if cfg.mode == "cache":
        tokens = tr.prompt_len
    else:
        # The last sampled token is never computed; max_model_len stops it earlier.
        tokens = tr.prompt_len + tr.output_len - 1
        if cfg.max_model_len is not None:
            tokens = min(tokens, cfg.max_model_len - 1)
    managers = ctx.length_managers
    need, at = held_at_peak(managers, tr.prompt_len - 1, tokens - 1)
    usable = ctx.num_blocks - 1
    if need <= usable:
        return None
    where = "at its last token" if at == tokens - 1 else f"at its token {at + 1:,} of {tokens:,}"
    alone = "" if ctx.all_full else f" {where} (its attention layers alone)"
    sizes = {m.block_size for m in managers}
    of = f" of {sizes.pop()} tokens" if len(sizes) == 1 else ""
    return (f"needs {need} blocks{of}{alone} but only {usable} are usable "
            f"(num_blocks {ctx.num_blocks})")
