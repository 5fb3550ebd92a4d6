"""Miss reasons read at the hash block, settled at the grains vLLM hits at, over KV cache groups
of several block sizes (a stream whose header says `hash_block_size`).

`MissStats` gives every missed hash block of the reference group a reason (`hash_units.py`:
each unit of a whole block under that block's key). Three things are coarser than a unit:

* **A whole block is one key.** Its units share the reason of its first unit, whose
  `partial_block` key (the key of the block before, the block's first token) is the block's own
  at the group's block size. A later unit's key (its own block's key, its first token) can only
  have been recorded by the same block, so it read `cold` where an earlier prompt shared the
  prefix into the block and went on otherwise (last session's approximation).
* **The block the prompt ends inside is its partial tail** (`partial_block`, counted in tokens
  as the tail is): no hit reaches into it, as hits end on the groups' lcm, a multiple of the
  block (our stream is refused beside partial-block hits, `engine/stream_checks.py`). With
  EAGLE's lookahead hashes a prompt of whole blocks lacks its last block's key (the hash after
  the prompt): no lookup reaches that block, `last_token`.
* **Hits end on the scheduler block**, the groups' lcm (vLLM's `cache_hit_alignment_tokens`).
  A block the reference group held, with every block from the hit to it, past the last lcm
  boundary within both that run and `prompt_tokens - 1`, could not be hit: `last_token` where
  the prompt is a whole number of lcm blocks and the run covers it (the cap took the last one),
  else `partial_block` (the shared prefix ends inside an lcm block). Held blocks before that
  boundary keep the hybrid's reason (`window`, `mamba_state`), else `evicted` (another group
  lacked it: each caches the same lcm-aligned prefixes, so only an eviction parts them). These
  were `evicted` (groups of 32 and 48 tokens: 32 tokens of a replay that evicted nothing).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kvcore.analysis.stats.attribution import COLD, EVICTED, LAST_TOKEN, PARTIAL


class Settled(NamedTuple):
    codes: np.ndarray       # the reason of each missed unit left a block (the tail's dropped)
    evictors: list[int]     # the evicting request of each `evicted` one found in the history
    tail: int               # the partial tail, in tokens
    capped: int             # 1 where the unit without a hash (lookahead) is `last_token`
    lead: int               # the units of the first missed block (`in_flight` moves them)


def settle(codes, evictors: list[int], held: set, hashes: list, hit: int, prompt: int,
           capped: int, junction: int | None, ratio: int, grain: int, hbs: int) -> Settled:
    """The unit reasons ``codes`` of the missed units ``hashes[hit:]`` (keys, ``held`` the
    reference group's cached ones) settled by the module's rules; ``ratio`` and ``grain``: the
    reference block and the lcm in hash blocks (``hbs`` tokens)."""
    codes = np.array(codes, dtype=np.int8)
    n = len(hashes)
    in_c = np.fromiter(map(held.__contains__, hashes[hit:n]), dtype=bool, count=n - hit)
    tail = prompt % hbs
    cut = n
    if ratio > 1:
        whole = prompt // (ratio * hbs) * ratio         # units of whole blocks
        if capped and prompt % (ratio * hbs) == 0:
            cut = max(whole - ratio, hit)               # the block without its key
            fixed = LAST_TOKEN
        else:
            cut = max(whole, hit)
            fixed = -1
        gone = codes[cut - hit:]
        k = int(np.count_nonzero((gone == EVICTED) & ~in_c[cut - hit:]))
        if k:                                           # (history entries, in unit order)
            evictors = evictors[:len(evictors) - k]
        if fixed >= 0:
            gone[:] = fixed
        else:
            tail += (n - cut + capped) * hbs
            capped = 0
            codes = codes[:cut - hit]
        units = np.arange(hit, cut)
        first = units - units % ratio                   # each unit's block's first unit
        take = (first >= hit) & ~in_c[:cut - hit]
        codes[:cut - hit][take] = codes[first[take] - hit]
    run = int(np.argmin(in_c[:cut - hit])) if not in_c[:cut - hit].all() else cut - hit
    if run:
        reach = hit + run
        end = min(reach * hbs, prompt - 1) // (grain * hbs) * grain
        edge = max(min(end, reach), hit)
        codes[:edge - hit] = EVICTED if junction is None else junction
        whole_lcm = prompt % (grain * hbs) == 0 and reach == n
        codes[edge - hit:run] = LAST_TOKEN if whole_lcm else PARTIAL
    lead = 0
    if len(codes) and codes[0] == COLD:
        lead = 1
        while lead < len(codes) and (hit + lead) % ratio and codes[lead] == COLD:
            lead += 1
    return Settled(codes, evictors, tail, capped, lead)
