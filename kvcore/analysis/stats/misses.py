"""Miss attribution: one reason for every prompt token of a counted admission that was not hit.

Prompt tokens = hit tokens + missed tokens, always. The missed tokens of a request are its full
prompt blocks past the hit (block size of the reference group: the first full-attention group,
else group 0) plus its partial tail. Reasons, checked in this order for each missed full block:

* ``last_token``: the block is the prompt's last, the prompt is a whole number of blocks, every
  earlier block hit (or, in a hybrid model, full attention held every one from the hit) and
  this one was cached: vLLM caps the lookup at ``num_tokens - 1``.
* ``window`` (a model with sliding-window or chunked local groups) or ``mamba_state`` (a
  hybrid Mamba model): the reference group had the block cached, and every block from the hit
  to it, so full attention alone would have hit it: another group stopped the lookup (a
  sliding window lacked the blocks before a junction; a Mamba group held no state at a block
  boundary that far: vLLM caches one only where a request's scheduled chunk ended).
* ``evicted``: the block's hash was cached earlier and has been evicted (or it is cached but an
  earlier block of the chain was evicted); ``by_evictor`` says which requests evicted it.
* ``domain``: never cached under this hash, but the same content was cached under another hash
  domain (LoRA / cache salt).
* ``partial_block``: never cached under this hash, but an earlier prompt (any admission, warm-up
  included) had the same tokens up to and including this block's first token and then either
  ended inside the block or went on differently: a shared prefix that ends inside a block
  cannot be hit, since only full blocks are hashed. Decided by the key (hash of the block
  before, or the hash domain's root for block 0; first token of the block), recorded for every
  missed block and partial tail of every admission (`blockkeys.BlockKeys`), whose value is the
  hash of the first block seen under it: a different hash (or a tail) means `partial_block`;
  the same hash means the same block was seen but never cached (e.g. still being computed) and
  stays `cold`.
  Needs `admit.first_tokens`.
* ``in_flight``: the first missed block, never seen at the admission, but cached in the same
  step or the next by a request admitted in an earlier step: a running request was computing it
  and had not cached it yet. Two ways: under async scheduling (vLLM's default on a GPU) a decode-completed block
  is cached one step later than under sync, so a follow-up prompt that arrives in that window
  gets a hit one block shorter (the oracle's h_followup_gap: 32 tokens against 48 in sync);
  and a chunked prefill that had not reached the block yet. Decided when that block is cached
  (the admission counts it `cold` until then).
* ``cold``: never seen.
* With a CPU tier (a stream of `replay --kv-offloading-size`), two more: ``cpu_tier``, the first
  `admit.cpu_hit_tokens` of the missed tokens (the tier served them), and ``evicted_both``, an
  ``evicted`` block whose chunk the tier evicted too (`cpu_tier.CpuTierStats.split_misses`);
  over full-attention and windowed groups a third, ``cpu_window``: an ``evicted`` block the
  tier would have served had its windowed groups' chunks been there (cpu_window.py).
* ``unknown``: the stream's `admit` has no `prompt_hashes`, or the request has a hash domain
  but no `content_hashes` and the block was never cached in its domain (see
  docs/events-requests.md).

The partial tail (``prompt_tokens % block_size`` tokens) is always ``partial_block``: a prefix
shared inside a block cannot be hit, since only full blocks are hashed. Over groups of several
block sizes the reasons, read at the hash block, are settled at the reference block and at the
groups' lcm, where hits end (coarse_reasons.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from kvcore.analysis.stats.attribution import (
    MAMBA_STATE,
    REASONS,
    TIER_REASONS,
    TIER_WINDOW_REASONS,
    WINDOW,
    block_reasons,
    reasons_per_block,
)
from kvcore.analysis.stats.blockkeys import BlockKeys, block_keys, remember, seen_array
from kvcore.analysis.stats.coarse_reasons import settle
from kvcore.analysis.stats.dist import Dist
from kvcore.analysis.stats.hash_units import HashUnits
from kvcore.analysis.stats.history import EvictedHashes
from kvcore.analysis.stats.native_events import native_reasons, native_remember

if TYPE_CHECKING:
    from kvcore.analysis.stats.cpu_tier import CpuTierStats
    from kvcore.analysis.stats.watched import WatchedMisses

_COLD = REASONS.index("cold")
# what a malformed `admit` makes the vectorized reasons raise: the per-block loop then runs and
# raises the error the stream's reader reports (or, if it does not, gives the same answer)
_BAD_ADMIT = (TypeError, ValueError, IndexError, KeyError, OverflowError, AttributeError)


class MissStats:
    """The miss reasons of every counted admission. It reads the collector's per-group cached
    and evicted hashes (``cached``, ``evicted``: shared, updated by the collector as events come)
    and keeps its own memory: content hashes requested under a hash domain, and the block keys
    seen (`BlockKeys`, reference group)."""

    def __init__(self, cached: list[set], evicted: list[EvictedHashes], ref: int,
                 block_size: int, group_types: list[str], tier: CpuTierStats | None = None,
                 *, hashed: bool = True) -> None:
        """``tier``: the CPU tier's section, for a stream with one (its evicted chunk keys
        split "evicted" in two, and its hits are a reason of their own). ``hashed``: False
        for a replay with prefix caching off, whose `admit` lines carry no block hashes."""
        self.tier = tier
        self.hashed = hashed
        self.reasons = (REASONS if tier is None else TIER_REASONS if tier.window is None
                        else TIER_WINDOW_REASONS)
        self.cached = cached
        self.evicted = evicted
        self.ref = ref                       # the reference group and its block size
        self.bs = block_size
        # A hybrid model's reason for a block full attention holds with its whole chain but the
        # lookup did not reach: a sliding-window (or chunked local) group lacked the blocks
        # before it, or a Mamba group held no state at a boundary that far (vLLM caches a Mamba
        # state only at some block boundaries). None: one kind of group, `evicted` as before.
        kinds = set(group_types) - {"full_attention", "mla"}
        self.junction: int | None = (
            None if not kinds else MAMBA_STATE if kinds <= {"mamba"} else WINDOW)
        self.tokens = dict.fromkeys(self.reasons, 0)
        self.blocks = dict.fromkeys(self.reasons, 0)
        self.requests = dict.fromkeys(self.reasons, 0)
        self.per_request = Dist()            # missed tokens per counted request
        self.by_evictor: Counter = Counter()
        # per group: content hashes requested under a domain
        self.domain_content: list[set] = [set() for _ in cached]
        self.seen = BlockKeys()              # (parent, first token) keys, reference group
        # First missed blocks counted cold, in case another request caches them right after
        # (`in_flight`): hash -> (admission step, request, its units were the request's only
        # cold ones, the units of its block: one but where the block is coarser than the hash
        # block, coarse_reasons.py)
        self.maybe_in_flight: dict[int, tuple[int, str, bool, int]] = {}
        # The step each request holding blocks was admitted in (the collector keeps it): only
        # a request already running before an admission was computing its blocks "in flight".
        self.admitted_step: dict[str, int] = {}
        # The native kernel, while the collector uses it (native_events.py), and how to leave it
        self.kernel: Any = None
        self.leave_native: Callable[[], None] | None = None
        self.watch: WatchedMisses | None = None     # one request's reasons (--explain)
        self.units = HashUnits(ref, 1, [])   # a coarser reference group's lists (the collector)
        self.lookahead = False               # EAGLE's lookahead hashes (the header says)

    def record(self, counts: dict[str, int], tail: int) -> None:
        bs = self.bs
        missed = tail
        for reason, n in counts.items():
            if n:
                self.blocks[reason] += n
                self.tokens[reason] += n * bs
                self.requests[reason] += 1
                missed += n * bs
        if tail:
            self.tokens["partial_block"] += tail
            if not counts.get("partial_block"):
                self.requests["partial_block"] += 1
        self.per_request.add(missed)

    def to_json(self, top: int, evictor_names) -> dict:
        return {
            "reasons": list(self.reasons),
            "tokens": self.tokens,
            "blocks": self.blocks,
            "requests": self.requests,
            "missed_tokens": sum(self.tokens.values()),
            "missed_tokens_per_request": self.per_request.summary(),
            "by_evictor": [{"req": evictor_names(r), "blocks": n}
                           for r, n in self.by_evictor.most_common(top)],
        }

    def ref_hashes(self, ev: dict) -> list[int] | None:
        """The admission's reference-group block hashes; None where there are none (prefix
        caching off: nothing hashed, nothing can hit; the misses are not told apart)."""
        ph = ev.get("prompt_hashes")
        if ph is None or len(ph) <= self.ref or ph[self.ref] is None or not (
                self.hashed or ph[self.ref]):
            return None
        return ph[self.ref]

    def attribute(self, ev: dict, hit_tokens: int) -> None:
        """Attribute the missed tokens of one counted admission (`ev` is the `admit` event)."""
        ref, bs = self.ref, self.bs
        ev, chain = self.units.fill(ev)
        prompt = ev["prompt_tokens"]
        n_full = prompt // bs
        tail = prompt - n_full * bs
        hit_blocks = min(hit_tokens // bs, n_full)
        hashes = self.ref_hashes(ev)
        if hashes is None:
            self.record({"unknown": n_full - hit_blocks}, tail)
            return
        # EAGLE's lookahead hashes: a prompt of whole blocks has none for its last block (it
        # covers the token after the prompt), which no lookup can hit: `last_token`
        capped = int(self.lookahead and not tail and n_full > hit_blocks
                     and len(hashes) == n_full - 1)
        n_full -= capped
        if len(hashes) != n_full:
            raise ValueError(f"prompt_hashes[{ref}] has {len(hashes)} hashes, the prompt has "
                             f"{n_full} full blocks")
        codes: np.ndarray | list[int]
        got = None
        if self.kernel is not None:
            got = native_reasons(self, ev, hashes, hit_blocks, tail)   # (keys remembered)
        kv = seen_before = None
        if got is not None:
            codes, evictors = got
        else:
            kv = block_keys(ev, ref, hashes, hit_blocks)
            seen_before = seen_array(self.seen, kv) if kv is not None else None
            try:
                codes, evictors = block_reasons(self, ev, hashes, hit_blocks, tail, seen_before)
            except _BAD_ADMIT:
                codes, evictors = reasons_per_block(self, ev, hashes, hit_blocks, tail,
                                                    seen_before)
        lead = 1
        if self.units.coarse:       # (groups of several block sizes: coarse_reasons.py)
            u = self.units
            codes, evictors, tail, capped, lead = settle(
                codes, list(evictors), self.cached[ref], hashes, hit_blocks, prompt, capped,
                self.junction, u.ratio, u.grain, bs)
        if self.tier is not None and len(codes):
            codes = self.tier.split_misses(ev, hashes if chain is None else chain, hit_blocks,
                                           self.bs, codes)
        names = self.reasons
        n = np.bincount(codes, minlength=len(names)).tolist() if len(codes) else []
        counts = {names[k]: c for k, c in enumerate(n) if c}
        if capped:
            counts["last_token"] = counts.get("last_token", 0) + 1
        self.by_evictor.update(evictors)         # in block order: ties of most_common keep it
        if len(codes) and codes[0] == _COLD:
            # it may yet turn out to be in flight (`on_cached`)
            self.maybe_in_flight[hashes[hit_blocks]] = (ev["step"], ev["req"],
                                                        counts["cold"] == lead, lead)
        content = ev.get("content_hashes")
        if ev.get("hash_domain") is not None and content:
            for g, chs in enumerate(content):
                if chs is not None:
                    self.domain_content[g].update(chs)
        if kv is not None and seen_before is not None:
            remember(self.seen, kv, seen_before)
        if self.watch is not None and ev["req"] == self.watch.rid:
            self.watch.admission(ev, hit_tokens, counts, tail, list(evictors))
        self.record(counts, tail)

    def on_cached(self, hashes: list[int], step: int, req: str) -> None:
        """Blocks the reference group just cached (a hash may be cached by several requests at
        once): a first missed block another request caches in its admission's step or the next
        was `in_flight`, not `cold`."""
        pending = self.maybe_in_flight
        if pending.keys().isdisjoint(hashes):   # the usual case, in one C-level pass
            return
        bs = self.bs
        for h in hashes:
            entry = pending.get(h)
            if entry is None:
                continue
            at, who, only_cold, k = entry
            if who == req or self.admitted_step.get(req, at) >= at:
                # its own copy (it computed the block it missed), or a request admitted with
                # it (both computed the block: cold)
                continue
            del pending[h]
            if step > at + 1:
                continue
            self.blocks["cold"] -= k
            self.tokens["cold"] -= k * bs
            self.blocks["in_flight"] += k
            self.tokens["in_flight"] += k * bs
            self.requests["in_flight"] += 1
            if only_cold:
                self.requests["cold"] -= 1
            if self.watch is not None and who == self.watch.rid:
                self.watch.in_flight(at, k * bs)

    def expire(self, step: int) -> None:
        """Forget first missed blocks whose window (admission step + 1) is over."""
        pending = self.maybe_in_flight
        for h in [h for h, (at, *_) in pending.items() if at + 1 < step]:
            del pending[h]

    def remember_admission(self, ev: dict, hit_tokens: int) -> None:
        """Record the block keys of an admission left out of the hit rate (warm-up)."""
        ref = self.ref
        ev = self.units.fill(ev)[0]
        hashes = self.ref_hashes(ev)
        if hashes is None:
            return
        start = min(hit_tokens // self.bs, len(hashes))
        if self.kernel is not None and native_remember(self, ev, hashes, start):
            return
        kv = block_keys(ev, ref, hashes, start)
        if kv is not None:
            remember(self.seen, kv, seen_array(self.seen, kv))
