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
* ``cold``: never seen.
* ``unknown``: the stream's `admit` has no `prompt_hashes`, or the request has a hash domain
  but no `content_hashes` and the block was never cached in its domain (see
  docs/events-requests.md).

The partial tail (``prompt_tokens % block_size`` tokens) is always ``partial_block``: a prefix
shared inside a block cannot be hit, since only full blocks are hashed.
"""

from __future__ import annotations

from collections import Counter

from kvcore.analysis.stats_dist import Dist

_RID_MASK = (1 << 32) - 1  # evicted[g][h] packs (evict step << 32) | evicting request index

REASONS = ("cold", "evicted", "partial_block", "last_token", "window", "domain", "unknown")


class MissStats:
    def __init__(self) -> None:
        self.tokens = dict.fromkeys(REASONS, 0)
        self.blocks = dict.fromkeys(REASONS, 0)
        self.requests = dict.fromkeys(REASONS, 0)
        self.per_request = Dist()            # missed tokens per counted request
        self.by_evictor: Counter = Counter()
        self.domain_content: list[set] = []  # per group: content hashes requested under a domain

    def record(self, counts: dict[str, int], bs: int, tail: int) -> None:
        missed = tail
        for reason, n in counts.items():
            if n:
                self.blocks[reason] += n
                self.tokens[reason] += n * bs
                self.requests[reason] += 1
                missed += n * bs
        if tail:
            self.tokens["partial_block"] += tail
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


def attribute(ev: dict, hit_tokens: int, ref: int, bs: int, cached: list[dict],
              evicted: list, swa_groups: list[int], stats: MissStats) -> None:
    """Attribute the missed tokens of one counted admission (`ev` is the `admit` event)."""
    prompt = ev["prompt_tokens"]
    n_full = prompt // bs
    tail = prompt - n_full * bs
    hit_blocks = min(hit_tokens // bs, n_full)
    counts: dict[str, int] = {}
    ph = ev.get("prompt_hashes")
    if ph is None or len(ph) <= ref or ph[ref] is None:
        counts["unknown"] = n_full - hit_blocks
        stats.record(counts, bs, tail)
        return
    hashes = ph[ref]
    if len(hashes) != n_full:
        raise ValueError(f"prompt_hashes[{ref}] has {len(hashes)} hashes, the prompt has "
                         f"{n_full} full blocks")
    content = ev.get("content_hashes")
    domain = ev.get("hash_domain")
    c_ref = cached[ref]
    e_ref = evicted[ref]
    was_evicted = e_ref.get_many(hashes[hit_blocks:])
    if domain is not None and content:
        content_evicted = e_ref.get_many(content[ref][hit_blocks:])
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
            stats.by_evictor[was_evicted[i - hit_blocks] & _RID_MASK] += 1
        else:
            ch = h
            seen_plain = False
            if domain is not None and content:
                ch = content[ref][i]
                seen_plain = ch in c_ref or content_evicted[i - hit_blocks] is not None
            if (ch != h and seen_plain) or ch in stats.domain_content[ref]:
                reason = "domain"
            elif domain is not None and not content:
                reason = "unknown"        # another domain may hold it: content_hashes missing
            else:
                reason = "cold"
        counts[reason] = counts.get(reason, 0) + 1
    if domain is not None and content:
        for g, chs in enumerate(content):
            if chs is not None:
                stats.domain_content[g].update(chs)
    stats.record(counts, bs, tail)
