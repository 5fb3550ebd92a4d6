"""A sliding window group's final tail in the CPU tier's stores under dense retention (vLLM
0.33's `_build_store_jobs`, offloading/scheduler.py:1858-1900, and `_final_swa_alignment_blocks`,
1801-1813).

Dense retention keeps a window's tail before every aligned boundary (the alignment: the
full-attention groups' chunk). A request's last segment, cut short by its store horizon, keeps
its own tail too (`final_segment_end_block`), and a finished request whose horizon moved past
its prompt's looks its last segment over again, storing only a tail no earlier pass kept. With
every group of one block size the alignment is the chunk and a horizon in whole chunks ends a
segment, so none of this shows; with groups of several block sizes a segment is several of a
window group's chunks (checked against vLLM: tests/data/offload_mixed).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FinalTail:
    horizon_chunks: int | None      # the last segment's end (vLLM's store_horizon_chunks)
    reconsider: bool                # a finished request looks its last segment over again
    align_blocks: int               # the alignment in the group's blocks (0: none)
    prompt_chunks: int              # the prompt's whole chunks (the earlier passes' horizon)

    def end(self, bpc: int) -> int | None:
        return None if self.horizon_chunks is None else self.horizon_chunks * bpc


def final_tail(alignment: int | None, sliding: bool, bs: int, retention: int | None,
               eagle: bool, finished: bool, n: int, prompt_chunks: int) -> FinalTail:
    """For a group storing up to chunk ``n`` (its storable chunks)."""
    if retention is not None or eagle:
        horizon: int | None = None
    elif finished:
        horizon = n
    elif n <= prompt_chunks:
        horizon = prompt_chunks
    else:
        horizon = None      # (a decode frontier is no request's end)
    align_blocks = alignment // bs if (
        alignment is not None and not eagle and sliding and alignment % bs == 0) else 0
    reconsider = (finished and n != prompt_chunks and retention is None
                  and align_blocks > 0)
    return FinalTail(horizon, reconsider, align_blocks, prompt_chunks)
