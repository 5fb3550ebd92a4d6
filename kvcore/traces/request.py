"""One request of a trace, as every reader yields it, and how its content becomes tokens.

A trace names prompt content in one of two ways:
* token ids (`prompt_token_ids`): replayed as given;
* trace block ids (`hash_ids`, one id per `trace_block_size` tokens, the last block may be
  partial): block `i` with id `h` becomes the tokens `h*TB, h*TB+1, ...` (TB = the trace's block
  size), so equal ids are equal content and different ids differ, at any engine block size
  (this is what the cache-mode oracle does, so hit rates agree with it token for token). A
  token past 64 bits (an id near 2^64) is taken modulo 2^64: the event streams write tokens as
  JSON integers, which orjson (and every reader in C) keeps to 64 bits.

Output tokens are unique to their request unless the trace gives them: the token at output
position `p` of the request with index `i` (0-based, file order) is
`1_000_000 + i * (max_model_len + 1) + p`, exactly as the scheduler oracle samples them, so block
hashes and KV events agree with it.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass

OUTPUT_TOKEN_BASE = 1_000_000
_WIDE = 1 << 64
# The scheduler oracle's max_model_len when a trace gives none; it sets the output token stride.
DEFAULT_TOKEN_STRIDE_MODEL_LEN = 8192


@dataclass(slots=True)
class TraceRequest:
    """A request as read from a trace (see the module docstring for how content is derived)."""

    index: int                  # 0-based position among the trace's requests, in file order
    line: int                   # 1-based line in the file (for error messages)
    id: str                     # request id (the trace's, or the line number)
    arrival_ms: float           # arrival time on the simulated clock, ms from the trace start
    arrival_step: int           # engine step at whose start it arrives (`--arrivals step`)
    prompt_len: int
    output_len: int
    # trace block ids (hash-id formats): an array("Q") as the reader keeps them (a list for
    # ids of 2**64 and more, or when built by hand)
    hash_ids: Sequence[int] | None = None
    trace_block_size: int | None = None        # tokens per trace block id
    prompt_token_ids: list[int] | None = None  # token-id format
    # the same ids as array("Q") when the reader made one (its check does): compared in C by
    # `kvcore.engine.prompt_prefixes`, 20x faster than the lists
    prompt_array: array | None = None
    output_token_ids: list[int] | None = None  # given output content (token-id format)
    priority: int = 0
    cache_salt: str | None = None
    lora: str | None = None

    def prompt_tokens(self) -> list[int]:
        """The prompt as token ids (derived from the trace block ids when the trace has no tokens)."""
        if self.prompt_token_ids is not None:
            return self.prompt_token_ids
        return self.prompt_source().tokens(0, self.prompt_len)

    def prompt_source(self) -> HashIdTokens:
        """The prompt of a hash-id request as a `kvcore.request.TokenSource`."""
        assert self.hash_ids is not None and self.trace_block_size is not None
        ids, tb = self.hash_ids, self.trace_block_size
        if ids and max(ids) >= _WIDE // tb:     # (a C-level pass over ~24 ids a request)
            return WideHashIdTokens(ids, tb, self.prompt_len)
        return HashIdTokens(ids, tb, self.prompt_len)

    def output_token(self, position: int, max_model_len: int | None) -> int:
        """The token sampled at output `position` (the trace's own, else the oracle's formula)."""
        out = self.output_token_ids
        if out is not None and position < len(out):
            return out[position]
        stride = (max_model_len or DEFAULT_TOKEN_STRIDE_MODEL_LEN) + 1
        return OUTPUT_TOKEN_BASE + self.index * stride + position

    def output_tokens(self, first: int, n: int, max_model_len: int | None) -> list[int]:
        """The tokens at output positions ``first .. first + n - 1`` (`output_token` of each)."""
        out = self.output_token_ids
        if out is not None and first < len(out):
            return [self.output_token(p, max_model_len) for p in range(first, first + n)]
        stride = (max_model_len or DEFAULT_TOKEN_STRIDE_MODEL_LEN) + 1
        base = OUTPUT_TOKEN_BASE + self.index * stride
        return list(range(base + first, base + first + n))

    def trace_blocks(self) -> list[tuple[int, int]]:
        """The request's trace blocks as `(key, tokens)` pairs, oldest first.

        For hash-id traces the key is the trace's block id and `tokens` the tokens it covers
        (the last one may be partial). For token-id traces there are no trace blocks: the key is
        the position-chained hash of 16-token chunks (`hash((parent_key, chunk))`), so equal
        keys mean equal prefixes. Used by capacity curves that work at the trace's granularity.
        """
        out: list[tuple[int, int]] = []
        if self.hash_ids is not None:
            tb = self.trace_block_size
            assert tb is not None       # (the reader sets both)
            left = self.prompt_len
            for h in self.hash_ids:
                n = min(tb, left)
                out.append((h, n))
                left -= n
            return out
        toks = self.prompt_token_ids or []
        parent = 0
        for s in range(0, len(toks), 16):
            chunk = tuple(toks[s:s + 16])
            parent = hash((parent, chunk, self.cache_salt, self.lora))
            out.append((parent, len(chunk)))
        return out


class HashIdTokens:
    """A hash-id prompt's token ids, computed for any range on demand: position ``p`` holds
    ``hash_ids[p // tb] * tb + p % tb`` (the module docstring's rule)."""

    __slots__ = ("hash_ids", "length", "tb")

    def __init__(self, hash_ids: Sequence[int], tb: int, length: int) -> None:
        self.hash_ids = hash_ids
        self.tb = tb
        self.length = length

    def tokens(self, start: int, end: int, step: int = 1) -> list[int]:
        tb = self.tb
        ids = self.hash_ids
        end = min(end, self.length)
        if step != 1:
            if start % step or tb % step:
                return [ids[p // tb] * tb + p % tb for p in range(start, end, step)]
            # every trace block starts on the stride (the admit event's first token of each
            # engine block): one range per trace block
            strided: list[int] = []
            for i in range(start // tb, -(-end // tb)):
                lo = max(start, i * tb)
                base = ids[i] * tb - i * tb
                strided.extend(range(base + lo, base + min(end, i * tb + tb), step))
            return strided
        out: list[int] = []
        p = start
        while p < end:
            i, off = divmod(p, tb)
            n = min(tb - off, end - p)
            base = ids[i] * tb + off
            out.extend(range(base, base + n))
            p += n
        return out


class WideHashIdTokens(HashIdTokens):
    """`HashIdTokens` of a prompt whose tokens pass 64 bits, each taken modulo 2^64 (`replay
    --events` of an id of 2^64 - 1 was a TypeError from the event writer, after the replay)."""

    __slots__ = ()

    def tokens(self, start: int, end: int, step: int = 1) -> list[int]:
        return [t & (_WIDE - 1) for t in HashIdTokens.tokens(self, start, end, step)]
