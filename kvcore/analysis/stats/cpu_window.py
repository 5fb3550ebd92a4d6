"""The `cpu_window` miss reason: vLLM's CPU lookup over several KV cache groups, answered again
as if every windowed group's chunks were on the CPU.

vLLM's connector (`_lookup_complete_chunks`; kvcli's `kvcore/offload/hybrid_lookup.py`,
docs/offload.md "Hybrid models") loads a hit only where every group has what it needs: the
full-attention groups every chunk from the GPU hit on, the windowed groups (sliding window,
chunked local, Mamba) the chunks of their window before the hit's end. A block the GPU missed
whose full-attention chunks the tier held, but that it did not serve, was lost to a windowed
group's chunks (evicted from the tier, or never stored): `cpu_window`, not `evicted`.

The answer with the windowed groups' chunks all there is the lookup's full-group part alone: a
windowed group whose chunks all hit ends its run at the end it was given, so it never moves the
end and never asks for another pass. What is left: the end starts at the prompt's tokens minus
one (a windowed group exists: its last token is recomputed), floored to the chunk with a Mamba
group; it is capped at the request's chunks; each full group, in group order, counts its leading
chunks on the CPU from chunk ``L // C`` (L: the GPU hit) and caps the end there; less than a
chunk past L is no hit.

Two parts of vLLM's answer are left out, on purpose: a chunk still being written counts as on
the CPU (vLLM answers "not yet" and the request waits for it, to be served a step or two later),
and so does a chunk another request is loading. The stream's `offload_store` (a chunk is on the
CPU from its store's creation, as vLLM allocates its slot then) and `offload_evict` say which
chunks each full group holds; `admit` says L, the prompt and its hashes (a chunk's key is the
hash of its last block).
"""

from __future__ import annotations

# the groups vLLM's lookup scans for a window (`hybrid_groups.group_infos`): every other group is a
# full one, scanned as a prefix
WINDOWED = frozenset({"sliding_window", "chunked_local", "mamba"})


class FullGroupChunks:
    """The chunk keys each full-attention group holds on the CPU, and the hit they would give.
    Memory: one int per chunk resident on the CPU (the tier's size bounds it)."""

    __slots__ = ("bpc", "groups", "held", "mamba", "tpcs", "windowed")

    def __init__(self, group_types: list[str], blocks_per_chunk: int,
                 block_sizes: list[int] | None = None) -> None:
        """``block_sizes``: each group's block (the header's; None: one size). Over groups of
        several block sizes each group's chunk is its own blocks (`HybridConnector.tpcs`)."""
        self.bpc = blocks_per_chunk
        self.groups = tuple(g for g, t in enumerate(group_types) if t not in WINDOWED)
        self.windowed = tuple(g for g, t in enumerate(group_types) if t in WINDOWED)
        self.held: dict[int, set[int]] = {g: set() for g in self.groups}
        # each group's chunk in blocks of the smallest (the hash block, whose hashes an `admit`
        # carries); None: one size, every chunk `bpc` blocks
        sizes = block_sizes or [1] * len(group_types)
        self.tpcs = [b * blocks_per_chunk // min(sizes) for b in sizes] \
            if len(set(sizes)) > 1 else None
        mamba = [g for g, t in enumerate(group_types) if t == "mamba"]
        self.mamba = mamba[0] if mamba else None

    def store(self, by_group: dict[int, list[int]]) -> None:
        for g, keys in by_group.items():
            self.held[g].update(keys)

    def evict(self, by_group: dict[int, list[int]]) -> None:
        for g, keys in by_group.items():
            self.held[g].difference_update(keys)

    def reach(self, ev: dict, hashes: list[int], bs: int) -> int:
        """The tokens the GPU hit and the tier would have covered at the admission ``ev`` had
        every windowed group's chunks been on the CPU (the GPU hit itself where the tier would
        have loaded nothing). ``hashes``: the prompt's full blocks (``bs`` tokens each, the
        hash block with several sizes); a group's key of chunk i is the hash of its last block.

        As `hybrid_lookup.lookup` with every windowed key a hit: the full groups in group order
        cap the end at their keys and their leading hits, each refusing a hit under its own
        chunk; a windowed group only caps the end at its keys, and is checked (again, in a
        second pass over the windowed groups) at the end they all agree on."""
        per = self.tpcs or [self.bpc] * (len(self.groups) + len(self.windowed))
        local = ev["hit_tokens"]
        end = min(ev["prompt_tokens"] - 1, len(hashes) * bs)
        if self.mamba is not None:
            c = per[self.mamba] * bs
            end = end // c * c          # a Mamba state exists only at a chunk's end
        for g in self.groups:
            k = per[g]
            c = k * bs
            n_keys = len(hashes) // k
            end = min(end, n_keys * c)
            start = local // c
            if end - local < c:         # less than a chunk past L: no hit
                return local
            held = self.held[g]
            n = 0
            for i in range(start, min(-(-end // c), n_keys)):
                if hashes[(i + 1) * k - 1] not in held:
                    break
                n += 1
            end = min(end, c * (start + n))
            if end - local < c:
                return local
        for g in self.windowed:
            end = min(end, len(hashes) // per[g] * per[g] * bs)
        if any(end - local < per[g] * bs for g in self.windowed):
            return local
        return end
