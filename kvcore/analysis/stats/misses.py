"""Miss attribution: one reason for every prompt token of a counted admission that was not hit.

Prompt tokens = hit tokens + missed tokens, always. The missed tokens of a request are its full
prompt blocks past the hit (block size of the reference group: the first full-attention group,
else group 0) plus its partial tail. Reasons, checked in this order for each missed full block:

* ``last_token``: the block is the prompt's last, the prompt is a whole number of blocks, every
  earlier block hit and this one was cached: vLLM caps the lookup at ``num_tokens - 1``.
* ``window``: the reference group had the block cached but a sliding-window group did not hold
  the window's blocks (hybrid models).
* ``evicted``: the block's hash was cached earlier and has been evicted (or it is cached but an
  earlier block of the chain was evicted); ``by_evictor`` says which requests evicted it.
* ``domain``: never cached under this hash, but the same content was cached under another hash
  domain (LoRA / cache salt).
* ``partial_block``: never cached under this hash, but an earlier prompt (any admission, warm-up
  included) had the same tokens up to and including this block's first token and then either
  ended inside the block or went on differently: a shared prefix that ends inside a block
  cannot be hit, since only full blocks are hashed. Decided by the key (hash of the block
  before, or the hash domain's root for block 0; first token of the block), recorded for every
  missed block and partial tail of every admission (`BlockKeys`), whose value is the hash of the
  first block seen under it: a different hash (or a tail) means `partial_block`; the same hash
  means the same block was seen but never cached (e.g. still being computed) and stays `cold`.
  Needs `admit.first_tokens`.
* ``in_flight``: the first missed block, never seen at the admission, but cached in the same
  step or the next by a request admitted in an earlier step: a running request was computing it
  and had not cached it yet. Two ways: under async scheduling (vLLM's default on a GPU) a decode-completed block
  is cached one step later than under sync, so a follow-up prompt that arrives in that window
  gets a hit one block shorter (the oracle's h_followup_gap: 32 tokens against 48 in sync);
  and a chunked prefill that had not reached the block yet. Decided when that block is cached
  (the admission counts it `cold` until then).
* ``cold``: never seen.
* ``unknown``: the stream's `admit` has no `prompt_hashes`, or the request has a hash domain
  but no `content_hashes` and the block was never cached in its domain (see
  docs/events-requests.md).

The partial tail (``prompt_tokens % block_size`` tokens) is always ``partial_block``: a prefix
shared inside a block cannot be hit, since only full blocks are hashed.
"""

from __future__ import annotations

import hashlib
from collections import Counter

from kvcore.analysis.stats.dist import Dist
from kvcore.analysis.stats.history import EvictedHashes

_RID_MASK = (1 << 32) - 1  # evicted[g][h] packs (evict step << 32) | evicting request index

REASONS = ("cold", "evicted", "partial_block", "last_token", "window", "domain", "in_flight",
           "unknown")

_M64 = (1 << 64) - 1
_FP = (1 << 62) - 1      # a block's value in `BlockKeys`: the low 62 bits of its hash
_TAIL = 1 << 62          # ... or this for a partial tail


class BlockKeys(EvictedHashes):
    """(parent hash, first token) key -> the first block seen under it (`_FP` bits of its hash,
    or `_TAIL`). The same compact dict + sorted-array store as the evicted history."""


def _root(domain: str | None) -> int:
    """The parent of block 0 in a key: 0, or a digest of the hash domain (stable across runs)."""
    if domain is None:
        return 0
    return int.from_bytes(hashlib.blake2b(domain.encode(), digest_size=8).digest(), "big")


def block_keys(ev: dict, ref: int, hashes: list[int], start: int
               ) -> tuple[list[int], list[int]] | None:
    """Keys and values of the prompt blocks from `start` on (full blocks, then the partial
    tail), or None when the `admit` carries no `first_tokens`."""
    ft = ev.get("first_tokens")
    if not ft or len(ft) <= ref or ft[ref] is None:
        return None
    toks = ft[ref]
    n_full = len(hashes)
    if len(toks) not in (n_full, n_full + 1):
        raise ValueError(f"first_tokens[{ref}] has {len(toks)} entries for {n_full} full blocks")
    keys = []
    vals = []
    for i in range(start, len(toks)):
        parent = hashes[i - 1] if i else _root(ev.get("hash_domain"))
        keys.append(hash((parent, toks[i])) & _M64)
        vals.append(hashes[i] & _FP if i < n_full else _TAIL)
    return keys, vals


def remember(seen: BlockKeys, keys: list[int], vals: list[int], found: list) -> None:
    """Record the keys not seen before (`found`: `seen.get_many(keys)`)."""
    for k, v, f in zip(keys, vals, found):
        if f is None:
            seen[k] = v


class MissStats:
    """The miss reasons of every counted admission. It reads the collector's per-group cached
    and evicted hashes (``cached``, ``evicted``: shared, updated by the collector as events come)
    and keeps its own memory: content hashes requested under a hash domain, and the block keys
    seen (`BlockKeys`, reference group)."""

    def __init__(self, cached: list[dict], evicted: list[EvictedHashes], ref: int,
                 block_size: int, swa_groups: list[int]) -> None:
        self.cached = cached
        self.evicted = evicted
        self.ref = ref                       # the reference group and its block size
        self.bs = block_size
        self.swa_groups = swa_groups
        self.tokens = dict.fromkeys(REASONS, 0)
        self.blocks = dict.fromkeys(REASONS, 0)
        self.requests = dict.fromkeys(REASONS, 0)
        self.per_request = Dist()            # missed tokens per counted request
        self.by_evictor: Counter = Counter()
        # per group: content hashes requested under a domain
        self.domain_content: list[set] = [set() for _ in cached]
        self.seen = BlockKeys()              # (parent, first token) keys, reference group
        # First missed blocks counted cold, in case another request caches them right after
        # (`in_flight`): hash -> (admission step, request, it was the request's only cold block)
        self.maybe_in_flight: dict[int, tuple[int, str, bool]] = {}
        # The step each request holding blocks was admitted in (the collector keeps it): only
        # a request already running before an admission was computing its blocks "in flight".
        self.admitted_step: dict[str, int] = {}

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
            "reasons": list(REASONS),
            "tokens": self.tokens,
            "blocks": self.blocks,
            "requests": self.requests,
            "missed_tokens": sum(self.tokens.values()),
            "missed_tokens_per_request": self.per_request.summary(),
            "by_evictor": [{"req": evictor_names(r), "blocks": n}
                           for r, n in self.by_evictor.most_common(top)],
        }

    def attribute(self, ev: dict, hit_tokens: int) -> None:
        """Attribute the missed tokens of one counted admission (`ev` is the `admit` event)."""
        ref, bs, cached = self.ref, self.bs, self.cached
        prompt = ev["prompt_tokens"]
        n_full = prompt // bs
        tail = prompt - n_full * bs
        hit_blocks = min(hit_tokens // bs, n_full)
        counts: dict[str, int] = {}
        ph = ev.get("prompt_hashes")
        if ph is None or len(ph) <= ref or ph[ref] is None:
            counts["unknown"] = n_full - hit_blocks
            self.record(counts, tail)
            return
        hashes = ph[ref]
        if len(hashes) != n_full:
            raise ValueError(f"prompt_hashes[{ref}] has {len(hashes)} hashes, the prompt has "
                             f"{n_full} full blocks")
        content = ev.get("content_hashes")
        domain = ev.get("hash_domain")
        c_ref = cached[ref]
        e_ref = self.evicted[ref]
        swa_groups = self.swa_groups
        was_evicted = e_ref.get_many(hashes[hit_blocks:])
        kv = block_keys(ev, ref, hashes, hit_blocks)
        if kv is not None:
            seen_before = self.seen.get_many(kv[0])
        if domain is not None and content:
            content_evicted = e_ref.get_many(content[ref][hit_blocks:])
        first_cold = False
        for i in range(hit_blocks, n_full):
            h = hashes[i]
            if h in c_ref:
                if i == n_full - 1 and tail == 0 and i == hit_blocks:
                    reason = "last_token"
                elif swa_groups and any(g < len(ph) and ph[g] is not None and i < len(ph[g])
                                        and ph[g][i] not in cached[g] for g in swa_groups):
                    reason = "window"
                else:
                    reason = "evicted"
            elif was_evicted[i - hit_blocks] is not None:
                reason = "evicted"
                self.by_evictor[was_evicted[i - hit_blocks] & _RID_MASK] += 1
            else:
                ch = h
                seen_plain = False
                if domain is not None and content:
                    ch = content[ref][i]
                    seen_plain = ch in c_ref or content_evicted[i - hit_blocks] is not None
                if (ch != h and seen_plain) or ch in self.domain_content[ref]:
                    reason = "domain"
                elif kv is not None and seen_before[i - hit_blocks] not in (None, h & _FP):
                    reason = "partial_block"
                elif domain is not None and not content:
                    reason = "unknown"    # another domain may hold it: content_hashes missing
                else:
                    reason = "cold"
                    if i == hit_blocks:
                        first_cold = True
            counts[reason] = counts.get(reason, 0) + 1
        if first_cold:
            # it may yet turn out to be in flight (`on_cached`)
            self.maybe_in_flight[hashes[hit_blocks]] = (ev["step"], ev["req"],
                                                        counts["cold"] == 1)
        if domain is not None and content:
            for g, chs in enumerate(content):
                if chs is not None:
                    self.domain_content[g].update(chs)
        if kv is not None:
            remember(self.seen, kv[0], kv[1], seen_before)
        self.record(counts, tail)

    def on_cached(self, hashes: list[int], step: int, req: str) -> None:
        """Blocks the reference group just cached (a hash may be cached by several requests at
        once): a first missed block another request caches in its admission's step or the next
        was `in_flight`, not `cold`."""
        pending = self.maybe_in_flight
        bs = self.bs
        for h in hashes:
            entry = pending.get(h)
            if entry is None:
                continue
            at, who, only_cold = entry
            if who == req or self.admitted_step.get(req, at) >= at:
                # its own copy (it computed the block it missed), or a request admitted with
                # it (both computed the block: cold)
                continue
            del pending[h]
            if step > at + 1:
                continue
            self.blocks["cold"] -= 1
            self.tokens["cold"] -= bs
            self.blocks["in_flight"] += 1
            self.tokens["in_flight"] += bs
            self.requests["in_flight"] += 1
            if only_cold:
                self.requests["cold"] -= 1

    def expire(self, step: int) -> None:
        """Forget first missed blocks whose window (admission step + 1) is over."""
        pending = self.maybe_in_flight
        for h in [h for h, (at, _, _) in pending.items() if at + 1 < step]:
            del pending[h]

    def remember_admission(self, ev: dict, hit_tokens: int) -> None:
        """Record the block keys of an admission left out of the hit rate (warm-up)."""
        ref = self.ref
        ph = ev.get("prompt_hashes")
        if ph is None or len(ph) <= ref or ph[ref] is None:
            return
        hashes = ph[ref]
        kv = block_keys(ev, ref, hashes, min(hit_tokens // self.bs, len(hashes)))
        if kv is not None:
            remember(self.seen, kv[0], kv[1], self.seen.get_many(kv[0]))
