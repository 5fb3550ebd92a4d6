"""Which Mamba states vLLM 0.33 caches under `prefix_cache_retention_interval` (a Mamba group's
`reachable_block_mask`, `kvcore.managers.mamba.MambaManager`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.managers.sliding_window import replay_boundaries

if TYPE_CHECKING:
    from kvcore.managers.mamba import MambaManager
    from kvcore.request import Request


def retained_states(m: MambaManager, start_block: int, end_block: int,
                    request: Request | None) -> list[bool] | None:
    """vLLM 0.33's sparse retention of Mamba states over blocks ``[start_block, end_block)``
    (None: every state). Retention None is dense; 0 (vLLM's default) keeps only the states a
    later hit can start from: the request's replay boundary (``num_prompt_tokens - 1``,
    floored: a resend's hit) and the shared-prefix junction its lookup reported; N > 0 also one
    state every N tokens."""
    retention = m.retention_interval
    if retention is None or request is None:
        return None
    bs = m.block_size
    align = m.cache_hit_alignment_tokens
    mask = [False] * (end_block - start_block)
    if retention > 0:
        per_segment = retention // bs
        if per_segment <= 1:
            return None
        first = (start_block + per_segment) // per_segment * per_segment - 1
        for i in range(first - start_block, len(mask), per_segment):
            mask[i] = True
    # (the replay boundaries move where any group drops, vLLM's coordinator-wide flag; the
    # junction's block below only where this group drops)
    boundaries = replay_boundaries(request.num_prompt_tokens, m.scheduler_block_size,
                                   m.replay_eagle)
    if request.shared_prefix_boundary:
        boundaries.append(request.shared_prefix_boundary)
        if m.use_eagle:
            boundaries.append(request.shared_prefix_boundary - bs)
    for tokens in boundaries:
        block = tokens // align * align // bs - 1
        if start_block <= block < end_block:
            mask[block - start_block] = True
    return mask
