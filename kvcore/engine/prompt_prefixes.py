"""`PromptPrefixes`: a token-id prompt's block hashes, reusing those of an earlier request that
shares its prefix.

A block's hash is a function of the tokens from the prompt's start to the block's end (each hash
chains the one before), so two requests whose first ``k * block_size`` tokens are equal have
the same first ``k`` hashes, whatever the hash function. Multi-turn traces send each turn as the
previous turn's prompt, its outputs and a new message, and conversations open on shared system
prompts: most prompt blocks are a prefix some earlier request already hashed. Comparing tokens
(list slices, compared in C) costs a few ns a token; hashing a block (a pickle and a sha256, as
vLLM) about 1.2 us, 75 ns a token.

How an earlier request is found without hashing: every token-id request with plain blocks (no
LoRA, salt or multimodal keys) is indexed by where its prompt's hashes end, ``(full blocks n,
the last token of block n - 1, the token half a block before it)`` (a key, not a proof: two
tokens are cheap to read, a tuple of the block was not). A new prompt probes that index
backwards from its own last full block, `PROBE` blocks deep (a turn's new message and the
previous turn's outputs lie between the two ends), checks a hit by comparing every token of
the prefix (a key proves nothing), then goes on through the blocks the earlier request hashed
since (its outputs, which the next turn's prompt repeats). With no hit, the most recent request
that began with the same first block gives the longest common prefix by bisection (a shared
system prompt). Exact by construction: a hash is reused only for equal tokens, and the rest are
hashed as `BlockHasher` hashes them (tests compare every hash with a plain hasher's).

Measured on `benchmarks/sched_vs_vllm.py --requests 2000` (170,651 full prompt blocks): 150,937
reused (88%); the whole process's instructions 8.8 -> 7.1 G (callgrind, compiled build), the
prompt arrays' comparison (instead of lists) took 0.4 G more off.

Memory: the index keeps the requests it names alive after they finish: their token lists (8
bytes a token; the ints are the trace's), hashes (~4 bytes a token) and outputs. It is bounded
by `TOKEN_BUDGET` prompt tokens, 4 M (about 50 MB; the oldest entries go first), and
`FIRST_LIMIT` first-block entries; the prompt arrays are the trace's own.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable

from kvcore.request import Request


class PromptPrefixes:
    """Token-id prompts indexed by where they end; `hash_prompt` hashes a new one."""

    PROBE = 64                  # blocks probed back from a new prompt's last full block
    TOKEN_BUDGET = 4_194_304    # prompt tokens of the indexed requests (below)
    FIRST_LIMIT = 1024          # first-block entries (the most recent request per first block)

    def __init__(self, block_size: int, token_budget: int | None = None,
                 first_limit: int | None = None) -> None:
        self.bs = block_size
        self.token_budget = token_budget or self.TOKEN_BUDGET
        self.first_limit = first_limit or self.FIRST_LIMIT
        # end key -> (full blocks, the request, its prompt as array("Q") or None); insertion
        # order: the oldest first
        self.ends: dict[tuple[int, int, int], tuple[int, Request, array | None]] = {}
        self.tokens = 0                     # sum of the entries' blocks * block size
        self.firsts: dict[tuple[int, ...], tuple[int, Request, array | None]] = {}

    def hash_prompt(self, request: Request, ids: array | None,
                    hash_after: Callable[[Request, list[bytes]], list[bytes]]) -> list[bytes]:
        """``request``'s prompt hashes (its `block_hashes` empty; ``ids``: its prompt as
        ``array("Q")``, or None): the shared prefix's reused, the rest from ``hash_after``
        (`BlockHasher.hash_after`). The request is indexed."""
        n_full = request.num_tokens // self.bs
        if n_full == 0:
            return []
        toks = request.all_token_ids
        hashes = self.lookup(toks, ids, n_full)
        hashes += hash_after(request, hashes)
        self.index((len(hashes), request, ids), toks)
        return hashes

    def lookup(self, toks: list[int], ids: array | None, n_full: int) -> list[bytes]:
        """The hashes of the longest prefix of the first ``n_full`` blocks of ``toks`` that an
        indexed request shares (a new list; empty when none)."""
        bs = self.bs
        lo = max(0, n_full - self.PROBE)
        # every probe's key built and looked up in C; the first entry found is the deepest
        lasts = toks[lo * bs + bs - 1:n_full * bs:bs]
        mids = toks[lo * bs + bs - 1 - bs // 2:n_full * bs:bs]
        keys = zip(range(n_full, lo, -1), reversed(lasts), reversed(mids))
        for entry in filter(None, map(self.ends.get, keys)):
            if self._same(entry, toks, ids, 0, entry[0] * bs):
                # it may have hashed further since (its outputs: the next turn's prompt)
                return self._shared(entry, toks, ids, entry[0], n_full)
        first = self.firsts.get(tuple(toks[:bs]))
        if first is None:
            return []
        return self._shared(first, toks, ids, 1, n_full)

    def _shared(self, entry: tuple[int, Request, array | None], toks: list[int],
                ids: array | None, n: int, n_full: int) -> list[bytes]:
        """The hashes of the blocks an indexed request shares with ``toks`` (at most
        ``n_full``), its first ``n`` known to be equal: one comparison when all are, else a
        bisection."""
        bs = self.bs
        hashes = entry[1].block_hashes
        hi = min(n_full, len(hashes))
        if hi > n and not self._same(entry, toks, ids, n * bs, hi * bs):
            while n < hi:
                mid = (n + hi + 1) // 2
                if self._same(entry, toks, ids, n * bs, mid * bs):
                    n = mid
                else:
                    hi = mid - 1
        return hashes[:hi]

    @staticmethod
    def _same(entry: tuple[int, Request, array | None], toks: list[int], ids: array | None,
              a: int, b: int) -> bool:
        """Tokens ``a .. b - 1`` equal in the indexed request and ``toks`` (``b`` within the new
        prompt). Prompt arrays compare as memory (2 us for 2,000 tokens, the lists 36 us, as
        much as hashing would cost); the indexed request's outputs as lists."""
        cand, cids = entry[1], entry[2]
        if ids is not None and cids is not None:
            m = min(b, len(cids), len(ids))
            if a < m:
                if cids[a:m] != ids[a:m]:
                    return False
                a = m
        return a >= b or cand.token_ids(a, b) == toks[a:b]

    def index(self, entry: tuple[int, Request, array | None], toks: list[int]) -> None:
        """Index a new request (``entry``: its hashed blocks, at least one, the request, its
        prompt array) under its first block and where its hashes end."""
        bs = self.bs
        n = entry[0]
        first = tuple(toks[:bs])
        self.firsts.pop(first, None)         # the most recent last
        self.firsts[first] = entry
        if len(self.firsts) > self.first_limit:
            del self.firsts[next(iter(self.firsts))]
        e = n * bs
        key = (n, toks[e - 1], toks[e - 1 - bs // 2])
        old = self.ends.pop(key, None)      # an equal-looking end indexed before: newest wins
        if old is not None:
            self.tokens -= old[0] * bs
        self.ends[key] = entry
        self.tokens += e
        while self.tokens > self.token_budget:
            gone = self.ends.pop(next(iter(self.ends)))
            self.tokens -= gone[0] * bs
