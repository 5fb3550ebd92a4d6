"""What a capacity curve needs from a trace: per request, its cacheable block keys and token counts.

Both the one-pass curve (`curve/onepass.py`) and the exact per-capacity simulations (`curve/sim.py`)
read only this: the requests in replay order, each with

* `keys`: its cacheable blocks in prefix order, as dense ints. A key is *chained* (it names the
  block and everything before it, like vLLM's block hash), so equal keys mean equal prefixes.
* `weights`: the tokens each key stands for (a hit on it saves that many tokens);
* `num_tokens`: the prompt length (the hit-rate denominator);
* `num_blocks`: the blocks the request occupies while it runs (`--rule vllm`: ceil(N / bs),
  its unhashed partial last block included);
* `hit_cap`: the most keys a lookup may hit.

The two hit rules (see `docs/curve.md`):

* ``vllm``: only full blocks are cacheable; a lookup hits at most ``num_tokens - 1`` tokens
  (vLLM recomputes the last prompt token), i.e. ``(N - 1) // bs`` blocks.
* ``trace``: every block of the trace, its partial last block included, is a cacheable unit,
  with no recompute cap (the Mooncake paper's and kvcache-simulator's convention).

Content comes from the trace as the replay does it (`kvcore.traces.request`): a trace block id
`h` of a trace with block size TB stands for the tokens `h*TB + j`, so an engine block's content
is fixed by the ids it covers; token-id traces give the tokens themselves.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

MAX_BLOCK_SIZE = 1 << 20        # tokens per block (--block-size, a config line's)
RULES = ("vllm", "trace")


class PromptSource(Protocol):
    """The fields of a trace request this module reads (`kvcore.traces.TraceRequest` has them)."""

    prompt_len: int
    hash_ids: Sequence[int] | None
    trace_block_size: int | None
    prompt_token_ids: list[int] | None


@dataclass(slots=True)
class CurveInput:
    """The requests of a trace reduced to block keys; arrays are concatenated per request."""

    rule: str
    block_size: int
    keys: np.ndarray        # int64, dense chained keys, all requests concatenated
    weights: np.ndarray     # int64, tokens per key
    starts: np.ndarray      # int64, len R+1: request r's keys are keys[starts[r]:starts[r+1]]
    num_tokens: np.ndarray  # int64 per request
    num_blocks: np.ndarray  # int64 per request: blocks held while it runs
    hit_cap: np.ndarray     # int64 per request: most keys a lookup may hit
    first_counted: int      # requests before this index only warm the cache (--warmup)
    num_keys: int           # distinct keys

    @property
    def num_requests(self) -> int:
        return len(self.num_tokens)


def stable_order(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` for non-negative integer keys, computed as a plain
    sort of ``key * n + index`` (numpy sorts int64 values several times faster than it
    argsorts them stably: ~3 ms against ~40 ms for 300k keys). Falls back to the stable argsort
    when a key is negative or the product could overflow."""
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if int(keys.min()) < 0 or int(keys.max()) >= (1 << 62) // n:
        return np.argsort(keys, kind="stable")
    packed = keys.astype(np.int64) * n + np.arange(n, dtype=np.int64)
    packed.sort()
    return packed % n


def warmup_start(num_requests: int, warmup: float) -> int:
    """Index of the first counted request: the first ``floor(R * warmup)`` only warm the cache."""
    return int(num_requests * warmup)


class _Chain:
    """Interns (parent key, block content) pairs into dense ints: a chained block key."""

    def __init__(self) -> None:
        self.table: dict[tuple, int] = {}
        self.roots: dict[tuple, int] = {}

    def key(self, parent: int, content) -> int:
        t = (parent, content)
        k = self.table.get(t)
        if k is None:
            k = self.table[t] = len(self.table)
        return k


def _root(chain: _Chain, req) -> int:
    """The parent of block 0: the request's cache salt and LoRA (vLLM hashes them in)."""
    salt = getattr(req, "cache_salt", None)
    lora = getattr(req, "lora", None)
    if salt is None and lora is None:
        return -1
    # Roots are negative so they never collide with a block key.
    return -2 - chain.roots.setdefault((salt, lora), len(chain.roots))


def _block_contents(req, bs: int, n_blocks: int):
    """Content labels of the request's first `n_blocks` engine blocks (the last may be partial)."""
    n = req.prompt_len
    if req.hash_ids is None:
        toks = req.prompt_token_ids
        return [tuple(toks[k * bs:(k + 1) * bs]) for k in range(n_blocks)]
    ids, tb = req.hash_ids, req.trace_block_size
    if bs == tb:
        return ids[:n_blocks]
    out = []
    for k in range(n_blocks):
        lo, hi = k * bs, min((k + 1) * bs, n)
        # The ids covering tokens [lo, hi), the trace block size and the length fix the content.
        out.append((tuple(ids[lo // tb:(hi - 1) // tb + 1]), tb, hi - lo))
    return out


def _token_runs(req, bs: int, n_blocks: int):
    """Content labels that compare across trace block sizes: each block's tokens as maximal runs
    of consecutive token values ``(first, count)`` (id ``h`` of block size TB is ``h*TB + j``).
    For a trace whose lines give different block sizes, where ``_block_contents``' labels of one
    size never equal another's although `kvcli replay` sees the same tokens."""
    ids, tb, n = req.hash_ids, req.trace_block_size, req.prompt_len
    out = []
    for k in range(n_blocks):
        lo, hi = k * bs, min((k + 1) * bs, n)
        runs: list[int] = []
        p = lo
        while p < hi:
            end = min((p // tb + 1) * tb, hi)
            first = ids[p // tb] * tb + p % tb
            if runs and runs[-2] + runs[-1] == first:
                runs[-1] += end - p
            else:
                runs += [first, end - p]
            p = end
        out.append(tuple(runs))
    return out


def _chained_ids(requests: list, rule: str, bs: int) -> CurveInput | None:
    """Fast path: when every trace block id already names its whole prefix (each id always
    follows the same parent id, as in Mooncake traces) and engine blocks are trace blocks, the
    chained key of a block is its id; check that with numpy and skip the interning loop."""
    if not requests or any(r.hash_ids is None or r.trace_block_size != bs
                           or getattr(r, "cache_salt", None) is not None
                           or getattr(r, "lora", None) is not None for r in requests):
        return None
    n_tok = np.fromiter((r.prompt_len for r in requests), dtype=np.int64, count=len(requests))
    lens = np.fromiter((len(r.hash_ids) for r in requests), dtype=np.int64, count=len(requests))
    try:
        ids = np.array(list(itertools.chain.from_iterable(r.hash_ids for r in requests)),
                       dtype=np.int64)
    except OverflowError:
        # an id of 2^63 or more (a trace may hold ids up to 2^64 - 1; this raised a traceback):
        # the interning path takes any int
        return None
    return chained_input(ids, lens, n_tok, rule, bs)


def chained_input(ids: np.ndarray, lens: np.ndarray, n_tok: np.ndarray, rule: str,
                  bs: int) -> CurveInput | None:
    """`CurveInput` straight from trace block ids (engine block size = trace block size):
    request r has ids ``ids[sum(lens[:r]):][:lens[r]]`` and ``n_tok[r]`` prompt tokens. None when
    some id follows two different parents (its id alone does not name its prefix)."""
    if len(n_tok) == 0:
        return None
    starts = np.concatenate(([0], np.cumsum(lens)))
    parent = np.concatenate(([-1], ids[:-1]))
    parent[starts[:-1][lens > 0]] = -1
    order = stable_order(ids)      # equal ids in file order: their parents must agree
    same_id = ids[order[1:]] == ids[order[:-1]]
    if np.any(same_id & (parent[order[1:]] != parent[order[:-1]])):
        return None
    dense = np.empty(len(ids), dtype=np.int64)   # ids renumbered 0.. in sorted order
    dense[order] = np.concatenate(([0], np.cumsum(~same_id)))
    total = lens
    if rule == "vllm":
        n_keys, cap = n_tok // bs, (n_tok - 1) // bs
    else:
        n_keys, cap = total, total
    keep = np.arange(len(ids)) - np.repeat(starts[:-1], lens) < np.repeat(n_keys, lens)
    weights = np.full(len(ids), bs, dtype=np.int64)
    if rule == "trace":
        last = starts[1:][lens > 0] - 1
        rem = (n_tok % bs)[lens > 0]
        weights[last[rem > 0]] = rem[rem > 0]
    keys = dense[keep]
    return CurveInput(rule=rule, block_size=bs, keys=keys, weights=weights[keep],
                      starts=np.concatenate(([0], np.cumsum(n_keys))).astype(np.int64),
                      num_tokens=n_tok, num_blocks=total, hit_cap=np.minimum(cap, n_keys),
                      first_counted=0,
                      num_keys=int(np.count_nonzero(np.bincount(keys))) if len(keys) else 0)


def build_input(requests: Iterable[PromptSource], *, rule: str, block_size: int,
                warmup: float = 0.0) -> CurveInput:
    """Reduce trace requests (replay order) to chained block keys under a hit rule."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}")
    requests = list(requests)
    fast = _chained_ids(requests, rule, block_size)
    if fast is not None:
        fast.first_counted = warmup_start(len(requests), warmup)
        return fast
    bs = block_size
    # one trace block size (the usual case): ids name content; several: compare token runs
    contents = (_token_runs if len({r.trace_block_size for r in requests
                                    if r.hash_ids is not None}) > 1 else _block_contents)
    chain = _Chain()
    keys: list[int] = []
    weights: list[int] = []
    starts = [0]
    num_tokens, num_blocks, hit_cap = [], [], []
    for req in requests:
        n = req.prompt_len
        total = -(-n // bs)
        if rule == "vllm":
            n_keys, cap = n // bs, (n - 1) // bs
        else:
            n_keys = cap = total
        parent = _root(chain, req)
        for c in (_block_contents if req.hash_ids is None else contents)(req, bs, n_keys):
            parent = chain.key(parent, c)
            keys.append(parent)
        weights.extend([bs] * n_keys)
        if rule == "trace" and n % bs:
            weights[-1] = n % bs
        starts.append(len(keys))
        num_tokens.append(n)
        num_blocks.append(total)
        hit_cap.append(min(cap, n_keys))
    r = len(num_tokens)
    return CurveInput(rule=rule, block_size=bs, keys=np.asarray(keys, dtype=np.int64),
                      weights=np.asarray(weights, dtype=np.int64),
                      starts=np.asarray(starts, dtype=np.int64),
                      num_tokens=np.asarray(num_tokens, dtype=np.int64),
                      num_blocks=np.asarray(num_blocks, dtype=np.int64),
                      hit_cap=np.asarray(hit_cap, dtype=np.int64),
                      first_counted=warmup_start(r, warmup), num_keys=len(set(keys)))
