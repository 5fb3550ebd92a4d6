"""`Ceilings`: the hit rates with infinite memory, for the decomposition of lost hits.

* the **trace ceiling**: one cache shared by all replicas, never evicting: a request hits the
  longest prefix of its blocks that any earlier request had;
* the **routed ceiling**: each replica its own infinite cache, the requests routed as they
  were: a request hits the longest prefix an earlier request routed to the same replica had.

Both apply vLLM's cap (the prompt's last token is always computed, hits are whole blocks). A
request's prompt blocks join the caches when it is routed; in engine mode, when the trace gives
its output tokens, its decode blocks join them when it finishes (`add_output`): a later prompt
that repeats the conversation holds them, and the engine caches them (random outputs no later
prompt holds are left out: they cost memory and change nothing). So routing loss = trace
ceiling - routed ceiling (what the routing threw away), capacity loss = routed ceiling -
achieved (what eviction, and in engine mode concurrency, threw away). Blocks are their 64-bit
hashes (`RouteRequest.block_hashes`).
"""

from __future__ import annotations

from collections.abc import Iterable


class Ceilings:
    __slots__ = ("block_size", "per", "routed_hit", "seen", "trace_hit")

    def __init__(self, n: int, block_size: int) -> None:
        self.block_size = block_size
        self.seen: set[bytes] = set()
        self.per: list[set[bytes]] = [set() for _ in range(n)]
        self.trace_hit: dict[str, int] = {}
        self.routed_hit: dict[str, int] = {}

    def add(self, rid: str, hashes: list[bytes], prompt_len: int, replica: int) -> None:
        """Request `rid` (its prompt blocks' hashes) routed to `replica`: its two ceiling hits,
        then its blocks join both caches."""
        cap = min(len(hashes), (prompt_len - 1) // self.block_size)
        bs = self.block_size
        seen, mine = self.seen, self.per[replica]
        k = _prefix(hashes, len(hashes), seen)
        self.trace_hit[rid] = min(k, cap) * bs
        seen.update(hashes[k:])
        k = _prefix(hashes, len(hashes), mine)
        self.routed_hit[rid] = min(k, cap) * bs
        mine.update(hashes[k:])

    def add_output(self, hashes: list[bytes], replica: int) -> None:
        """A finished request's decode blocks (engine mode, output tokens from the trace)."""
        self.seen.update(hashes)
        self.per[replica].update(hashes)

    def totals(self, rids: Iterable[str]) -> tuple[int, int]:
        """(trace ceiling hit tokens, routed ceiling hit tokens) summed over `rids`."""
        t = r = 0
        for rid in rids:
            t += self.trace_hit[rid]
            r += self.routed_hit[rid]
        return t, r


def _prefix(hashes: list[bytes], n: int, held: set[bytes]) -> int:
    """The number of leading blocks of `hashes[:n]` in `held` (monotone: binary search)."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if hashes[mid] in held:
            lo = mid + 1
        else:
            hi = mid
    return lo


def ceiling_note(groups: list) -> str | None:
    """The warning for groups whose own rules miss hits no capacity gives back (a sliding or
    chunked window frees what leaves it, Mamba keeps states only at its checkpoints): the
    ceilings follow full-attention prefixes, so `capacity_loss` holds those misses too (a
    gpt-oss-20b run that never evicted showed 0.3% of capacity loss: `kvcli stats`' `window`)."""
    from kvcore.engine.replay_pool import group_type
    from kvcore.specs import FullAttentionSpec

    kinds = sorted({group_type(g.kv_cache_spec) for g in groups
                    if not isinstance(g.kv_cache_spec, FullAttentionSpec)})
    if not kinds:
        return None
    return (f"the ceilings match full-attention prefixes: capacity_loss also holds the hits "
            f"this model's {', '.join(kinds)} group(s) miss at any capacity (kvcli stats on "
            "--events DIR/ROUTER tells them apart: its window and mamba_state misses)")
