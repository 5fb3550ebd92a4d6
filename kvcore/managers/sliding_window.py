"""Sliding window attention: a token reads only the last ``sliding_window`` tokens.

So a hit need not be a full prefix: it is enough that the blocks covering the last W-1 tokens
before the hit's end are cached; everything before them is a null entry. The lookup scans right
to left for the first run of ``cdiv(W - 1, block_size)`` cached blocks. Blocks that slide out of
the window are freed during the request (`remove_skipped_blocks`), before any allocation.
"""

from __future__ import annotations

from collections.abc import Sequence

from kvcore.hashing import resolve_block_hashes
from kvcore.managers.base import SingleTypeKVCacheManager
from kvcore.request import Request
from kvcore.specs import SlidingWindowSpec, cdiv


def contiguous_blocks_for_hit(window: int, block_size: int, use_eagle: bool) -> int:
    # EAGLE drops the last matched block, so it needs one more in the run.
    return cdiv(window - 1, block_size) + (1 if use_eagle else 0)


def max_admission_blocks(spec: SlidingWindowSpec, max_in_flight_tokens: int,
                         max_model_len: int) -> int:
    """Most blocks one request can hold at once: the window plus what is in flight, +1 because
    the window need not start on a block boundary."""
    n = min(spec.sliding_window - 1 + max_in_flight_tokens, max_model_len)
    return cdiv(n, spec.block_size) + 1


def window_runs_mask(start: int, end: int, bs: int, align: int, need: int, eagle: bool,
                     segment: int | None, boundaries: Sequence[int],
                     final_end: int | None = None) -> list[bool] | None:
    """Blocks ``start..end`` that a window hit could read (vLLM's
    `SlidingWindowManager.reachable_block_mask`, for the GPU cache and the CPU tier's stores):
    the ``need`` blocks before each ``segment``'s end (None or 0: no segment), and before each
    of the ``boundaries`` (tokens, floored to ``align``); with EAGLE's drop (``eagle``) each
    run ends one block later. None: every block (a run as long as a segment). ``final_end``
    (blocks, no EAGLE): a request's last segment, cut short there, keeps its own tail
    (vLLM's `final_segment_end_block`; the CPU tier's stores over groups of several block
    sizes, where a segment is more than a chunk)."""
    shift = 1 if eagle else 0
    mask = [False] * (end - start)
    if segment:
        per = segment // bs
        if need >= per:
            return None
        for i in range(start, end):
            if i >= shift and (i - shift) % per >= per - need:
                mask[i - start] = True
        if final_end is not None and not eagle and final_end % per:
            for i in range(max(start, final_end - final_end % per, final_end - need),
                           min(end, final_end)):
                mask[i - start] = True
    for tokens in boundaries:
        stop = tokens // align * align // bs + shift
        for j in range(max(start, stop - need), min(end, stop)):
            mask[j - start] = True
    return mask


def replay_boundaries(num_prompt_tokens: int, scheduler_block_size: int,
                      use_eagle: bool) -> list[int]:
    """Where a later request replaying this prompt can resume: a resend of the same prompt is
    capped at ``num_tokens - 1``; with EAGLE (which drops a matched block) one block below a
    resend's and a longer sibling's last aligned block."""
    if not use_eagle:
        return [num_prompt_tokens - 1]
    block = scheduler_block_size
    resend = (num_prompt_tokens - 1) // block * block
    extension = num_prompt_tokens // block * block
    return sorted({max(resend - block, 0), max(extension - block, 0)})


class SlidingWindowManager(SingleTypeKVCacheManager):
    skips_tokens = True

    def _finish_init(self) -> None:
        spec = self.kv_cache_spec
        assert isinstance(spec, SlidingWindowSpec)
        self.sliding_window = spec.sliding_window

    @classmethod
    def admission_cap(cls, spec, max_in_flight_tokens: int, max_model_len: int) -> int | None:
        return max_admission_blocks(spec, max_in_flight_tokens, max_model_len)

    @classmethod
    def find_longest_cache_hit(cls, block_hashes, max_length, kv_cache_group_ids, block_pool,
                               kv_cache_spec, drop_eagle_block=False, alignment_tokens=None):
        bs = kv_cache_spec.block_size
        if alignment_tokens is None:
            alignment_tokens = bs
        hashes = resolve_block_hashes(block_hashes, block_pool.hash_block_size, bs)
        need = contiguous_blocks_for_hit(kv_cache_spec.sliding_window, bs, drop_eagle_block)
        max_blocks = min(max_length // bs, len(hashes))
        null = block_pool.null_block
        computed = tuple([null] * max_blocks for _ in kv_cache_group_ids)
        run = 0
        found = False
        get = block_pool.get_cached_block
        for i in range(max_blocks - 1, -1, -1):
            cached = get(hashes[i], kv_cache_group_ids)
            if cached is None:
                run = 0
                continue
            if run == 0 and bs != alignment_tokens:
                # A run must end on an aligned boundary.
                end_blocks = i if drop_eagle_block else i + 1
                if (end_blocks * bs) % alignment_tokens != 0:
                    continue
            for lst, blk in zip(computed, cached):
                lst[i] = blk
            run += 1
            if run >= need:
                for lst in computed:
                    del lst[i + run:]  # drop the trailing nulls
                found = True
                break
        if not found:
            # Only a run starting at block 0 counts: the whole prefix fits in the window.
            for lst in computed:
                del lst[run:]
            while bs != alignment_tokens and len(computed[0]) * bs % alignment_tokens != 0:
                for lst in computed:
                    lst.pop()
        if drop_eagle_block and computed[0]:
            for lst in computed:
                lst.pop()
            while bs != alignment_tokens and len(computed[0]) * bs % alignment_tokens != 0:
                for lst in computed:
                    lst.pop()
        return computed, len(computed[0]) * bs

    def get_num_skipped_tokens(self, num_computed_tokens: int) -> int:
        """Tokens before the window of the next token: with W=4 and 7 computed, tokens 0-3."""
        return max(0, num_computed_tokens - self.sliding_window + 1)

    def tokens_to_skip_block(self, block_index: int) -> int:
        """Tokens before the window reach past block ``i`` at ``(i + 1) * bs + W - 1`` computed:
        W=4, bs=2 skips block 0 from 5 on (2 tokens before the window)."""
        return (block_index + 1) * self.block_size + self.sliding_window - 1

    def reachable_block_mask(self, start_block: int, end_block: int,
                             request: Request | None = None) -> list[bool] | None:
        """Which blocks could ever serve a hit: a hit needs the window's run of blocks before
        its end. Dense retention (None) keeps the run before every aligned boundary (all
        blocks when the run is a segment or more); a positive interval N one run per N tokens;
        and under any sparse retention (0 included, vLLM's default) the runs ending at the
        request's replay boundary (``num_prompt_tokens - 1``: a resend's hit) and at a shared
        prefix junction the lookup reported (``shared_prefix_boundary``)."""
        align = self.cache_hit_alignment_tokens
        bs = self.block_size
        if align % bs != 0:
            return None
        eagle = self.use_eagle
        retention = self.retention_interval
        boundaries: list[int] = []
        if retention is not None and request is not None:
            # (the boundaries follow any group's drop, the run's shape this group's own)
            boundaries = replay_boundaries(request.num_prompt_tokens,
                                           self.scheduler_block_size, self.replay_eagle)
            if request.shared_prefix_boundary:
                boundaries.append(request.shared_prefix_boundary)
                if eagle:
                    boundaries.append(request.shared_prefix_boundary - bs)
        return window_runs_mask(start_block, end_block, bs, align,
                                contiguous_blocks_for_hit(self.sliding_window, bs, eagle), eagle,
                                align if retention is None else retention, boundaries)
