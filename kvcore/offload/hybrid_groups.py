"""Each offloaded group's shape to the CPU tier over several KV cache groups (`HybridConnector`):
its window in chunks, a sliding window's width, whether it is a Mamba group, and vLLM's
`alignment_tokens` over the groups' chunks (`offloading/scheduler.py:180-262`)."""

from __future__ import annotations

from dataclasses import dataclass

from kvcore.specs import ChunkedLocalAttentionSpec, MambaSpec, SlidingWindowSpec, cdiv


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """One offloaded group: its window in chunks (None: full attention) and, for a sliding
    window, its width in tokens (the load window and the store reachability need it)."""

    window: int | None
    sliding: int | None = None
    mamba: bool = False     # one state a chunk, stored when the GPU side hands it off

    def load_window(self, num_tokens: int, tpc: int) -> int | None:
        """The chunks a hit ending at ``num_tokens`` loads in this group (None: all)."""
        w = self.window
        if self.sliding is not None and w is not None:
            w = max(w, cdiv(self.sliding - 1 + (-num_tokens % tpc), tpc))
        return w


def group_infos(groups: list, tpcs: list[int]) -> list[GroupInfo]:
    out = []
    for g, tpc in zip(groups, tpcs):
        spec = g.kv_cache_spec
        if isinstance(spec, SlidingWindowSpec):
            w = spec.sliding_window
            out.append(GroupInfo(max(cdiv(w, tpc), cdiv(w - 1, tpc)), w))
        elif isinstance(spec, ChunkedLocalAttentionSpec):
            out.append(GroupInfo(cdiv(spec.attention_chunk_size, tpc)))
        elif isinstance(spec, MambaSpec):
            out.append(GroupInfo(1, mamba=True))    # a hit needs the one state at its end
        else:
            out.append(GroupInfo(None))
    return out


def alignment_tokens(infos: list[GroupInfo], tpcs: tuple[int, ...]) -> int | None:
    """vLLM's `alignment_tokens` (`offloading/scheduler.py:180-204`): the full-attention
    groups' chunk when they agree on one; None when they differ; with none, the largest chunk.
    A sliding window's store mask is block-granular over it (`hybrid_stores.reachable_mask`)."""
    full = {t for info, t in zip(infos, tpcs) if info.window is None}
    if len(full) == 1:
        return full.pop()
    return None if full else max(tpcs)
