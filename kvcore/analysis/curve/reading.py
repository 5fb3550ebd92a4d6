"""A curve's input from a trace file: the block keys (`input.py`), the block size it runs at,
and what the reading has to say about the trace (warnings, in the result's `warnings`)."""

from __future__ import annotations

from kvcore.analysis.curve.fastread import MOONCAKE_BLOCK, read_hash_id_trace
from kvcore.analysis.curve.input import (
    MAX_BLOCK_SIZE,
    CurveInput,
    build_input,
    chained_input,
    warmup_start,
)
from kvcore.traces import out_of_order_warning


def read_input(trace_path: str, rule: str, warmup: float, block_size: int | None, trace=None
               ) -> tuple[CurveInput, int, list[str], object]:
    """(input, block size, warnings, the trace as read: None when the fast reader took it).
    ``block_size`` None: the trace's own (16 for a trace of prompt lengths only)."""
    if trace is None and block_size in (None, MOONCAKE_BLOCK):
        # A plain Mooncake file: arrays straight from the bytes, no per-request objects.
        arrays = read_hash_id_trace(trace_path)
        if arrays is not None:
            tbs = arrays.trace_block_size
            inp = chained_input(arrays.ids, arrays.lens, arrays.num_tokens, rule, tbs)
            if inp is not None:
                inp.first_counted = warmup_start(inp.num_requests, warmup)
                return inp, tbs, _late(arrays.out_of_order), trace
    if trace is None:
        from kvcore.traces import read_trace

        trace = read_trace(trace_path)
    from kvcore.traces.formats import CONTENTLESS_FORMATS

    contentless = trace.format in CONTENTLESS_FORMATS
    line_bs = _config_line(trace)      # (checked with --block-size too: it was skipped)
    bs = block_size if block_size is not None else line_bs
    if bs is None:
        # (a lengths-only trace's ids are made up, of UNIQUE_BLOCK tokens: not its size)
        bs = 16 if contentless else next(
            (r.trace_block_size for r in trace.requests if r.trace_block_size), 16)
    notes = _late(trace.out_of_order)
    if any(r.output_token_ids is not None for r in trace.requests):
        notes.append("the trace gives output tokens: the curve counts prompt blocks (as cache "
                     "mode), an engine replay also caches the outputs a later prompt may repeat")
    if contentless:
        notes.append(f"{trace.format} trace: prompt lengths only, so every prompt is unique and "
                     "the hit rate is 0 by construction")
    return build_input(trace.requests, rule=rule, block_size=bs, warmup=warmup), bs, notes, trace


# A config line's keys that change what cache mode hits, which the curve's one pass and
# simulations do not model (its replayed points read them): refused rather than half applied.
# (Scheduler keys change nothing in cache mode.)
UNMODELLED = ("groups", "prefix_match_unit", "prefix_cache_retention_interval", "max_model_len",
              "kv_offloading_size", "kv_offloading_size_chunks", "model", "model_config")


def _config_line(trace) -> int | None:
    """The config line's block size (the curve reads it as `kvcli replay` does: a flag wins);
    an `InputError` for a key the curve cannot honour (it was ignored: a config line's block
    size 8 gave a curve at 16, prefix caching off a ceiling of 60%)."""
    from kvcore.engine.options import ReplayOptions, resolve
    from kvcore.errors import InputError

    cfg = trace.config or {}
    where = {"path": trace.label, "line": trace.config_line}
    # The line's keys and values checked as `kvcli replay` checks them: a key the curve does
    # not read was let through unchecked (an unknown key, enable_prefix_caching "no" read as
    # on, eviction_policy "bogus"), where a replay of the same trace refused it.
    resolve(ReplayOptions(mode="cache", given=frozenset()), cfg, path=trace.label,
            config_line=trace.config_line)
    if cfg.get("enable_prefix_caching") is False:
        raise InputError("turns prefix caching off: no capacity hits anything (a curve needs "
                         "it on)", field="config.enable_prefix_caching", **where)
    for key in UNMODELLED:
        if cfg.get(key) is not None:
            raise InputError("the curve models one full-attention group with prefix caching "
                             "and the trace's prompts alone; it does not read this key (kvcli "
                             "replay --num-blocks C+1 runs one capacity with it)",
                             field=f"config.{key}", **where)
    bs = cfg.get("block_size")
    if bs is not None and (isinstance(bs, bool) or not isinstance(bs, int) or bs < 1):
        raise InputError(f"must be a positive integer, got {bs!r}", field="config.block_size",
                         **where)
    if bs is not None and bs > MAX_BLOCK_SIZE:     # (as --block-size: 2**63 overflowed numpy)
        raise InputError(f"must be at most {MAX_BLOCK_SIZE:,}, got {bs:,}",
                         field="config.block_size", **where)
    return bs


def _late(n: int) -> list[str]:
    said = out_of_order_warning(n, "taken")
    return [said] if said else []
