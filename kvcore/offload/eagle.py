"""vLLM 0.33's rules for the groups holding an EAGLE/MTP draft's layers (`is_eagle_group`,
offloading/scheduler.py), the CPU tier's side of speculative decoding.

A draft's KV at a block's last position is built from the next token, which a rejected draft
may change: the trailing chunk of a flagged group is volatile.

* Stores (`storable_chunks`, 447-474): while a request decodes (its storable tokens run past
  its prompt, `offload_prompt_only` off) and has not finished, a flagged group stores one chunk
  less than it could; a finished request stores it.
* Lookups (`_lookup_complete_chunks`, 889-1000): a flagged group not yet "verified" in this
  pass queries one chunk more (a windowed group needs a run one chunk longer, its first run
  too), then pops the last chunk it hit, and is verified; a non-flagged group shrinking the hit
  un-verifies them all, so the next pass pops again.
* A sliding window's store reachability (`SlidingWindowManager.reachable_block_mask`,
  single_type_kv_cache_manager.py:1067-1140): a hit's run is one block longer and its right
  edge one block later (the EAGLE peek), and no final-segment tail is kept.

Nothing here applies to ngram, nor where no group is flagged (vLLM logs that it treats every
group as a non-draft group, 218-232).
"""

from __future__ import annotations


def storable_chunks(n_chunks: int, eagle: bool, horizon: int, num_prompt_tokens: int,
                    finished: bool) -> int:
    """The chunks a group may store up to (``n_chunks``: the horizon's whole chunks), less the
    volatile trailing one of a flagged group while its request decodes."""
    if eagle and horizon > num_prompt_tokens and not finished:
        return max(0, n_chunks - 1)
    return n_chunks
