"""The reference group's prompt at the hash block, when its block is coarser (KV cache groups
of several block sizes: ox109's 32, 32 and 16 tokens, hash block 16).

Our stream's `admit` lists (`prompt_hashes`, `first_tokens`, `content_hashes`) are per group at
the hash block, null for a group whose block is coarser (`engine/admit_fields.py`); the header
says the hash block then (`hash_block_size`). Every group hashes the prompt with the same hasher,
so a group at the hash block gives the chain; where no group is at it (groups of 32 and 48
tokens, hash block 16) the `admit` carries the chain itself (`chain_hashes`,
`chain_first_tokens`, `chain_content_hashes`; a stream written before them leaves such misses
`unknown`). The reference group's misses are read at the hash block: each hash unit of a
whole block of the group stands for that block, whose key is its last unit's hash (as the
group's `cache`, `touch` and `evict` events name it); a unit of the block the prompt ends inside
keeps its own hash (the partial entry the pool keys it under, `kvcore/partial_hashes.py`). The
reasons are then settled at the block and at the groups' lcm, where hits end
(`coarse_reasons.py`).
"""

from __future__ import annotations

from typing import Any

# each per-group list, the chain's own field where no group is at the hash block, and whether
# its entries are keys (hashes) or first tokens
_LISTS = (("prompt_hashes", "chain_hashes", True), ("first_tokens", "chain_first_tokens", False),
          ("content_hashes", "chain_content_hashes", True))


def unit_keys(chain: Any, ratio: int) -> list:
    """The key each hash unit of ``chain`` is looked up under in a group of ``ratio`` units a
    block."""
    n = len(chain)
    whole = n // ratio * ratio
    return [chain[(i // ratio + 1) * ratio - 1] for i in range(whole)] + list(chain[whole:])


class HashUnits:
    def __init__(self, ref: int, ratio: int, chain_groups: list[int], grain: int = 1) -> None:
        """``ratio``: the reference group's block in hash blocks; ``chain_groups``: the groups
        whose block is the hash block (their lists are the chain); ``grain``: the groups' lcm,
        where hits end, in hash blocks. ``coarse``: the reasons are settled at those grains
        (`coarse_reasons.py`), for groups of several block sizes."""
        self.ref = ref
        self.ratio = ratio
        self.chain = chain_groups
        self.grain = grain
        self.coarse = ratio > 1 or grain > 1

    def fill(self, ev: dict) -> tuple[dict, Any]:
        """(``ev`` with the reference group's lists filled from the chain, the chain itself);
        ``ev`` and None where there is nothing to fill (a reference group at the hash block,
        or no chain: a stream written before `chain_hashes`, whose misses stay `unknown`)."""
        ref = self.ref
        ph = ev.get("prompt_hashes")
        if self.ratio == 1 or type(ph) is not list or len(ph) <= ref or ph[ref] is not None:
            return ev, None
        src = next((g for g in self.chain if g < len(ph) and ph[g] is not None), None)
        if src is None:
            return self._fill_from(ev, ev.get("chain_hashes"), None)
        return self._fill_from(ev, ph[src], src)

    def _fill_from(self, ev: dict, chain: Any, src: int | None) -> tuple[dict, Any]:
        """``ev`` with the reference group's lists filled from group ``src``'s, or from the
        chain's own fields (``src`` None)."""
        if type(chain) is not list:
            return ev, None
        ref = self.ref
        out = dict(ev)
        for key, own, keyed in _LISTS:
            v = ev.get(key)
            if src is None:
                got = ev.get(own)
                if type(got) is not list:
                    continue
                filled = list(v) if type(v) is list and len(v) > ref else [None] * (ref + 1)
            elif type(v) is list and len(v) > max(src, ref) and v[src] is not None:
                got, filled = v[src], list(v)
            else:
                continue
            filled[ref] = unit_keys(got, self.ratio) if keyed else got
            out[key] = filled
        return out, chain
