"""`kvcli gen b2b`: llm-d's multi-tenant B2B workload, as a Mooncake trace (hash ids with a
`block_size` field, the content model of `gen.py`).

Source: the llm-d blog "KV-Cache Wins You Can See" (2025-09-24), Appendix A.2: 150 enterprise
customers (tenants), each with its own 6,000-token context (system prompt and documents, the
shared prefix); 5 users per tenant, each sending 1,200-token questions; Poisson arrivals ramped
from 3 to 60 QPS. The blog links its run's report (llm-d-kv-cache-manager
`benchmarking/73-capacity`, not stored here); its sibling report (`benchmarking/37-capacity`)
drives inference-perf's `shared_prefix` data generator with `output_len: 1000`, and that
generator is what this module follows: it builds T*U fixed prompts (tenant context + the user's
question), shuffles them once, and request i sends prompt i mod T*U. So a user re-sends the
same prompt every T*U requests. The blog's "73% of cluster capacity" is exactly that footprint:
(150*6,000 + 750*1,200) / (8*307,328) = 0.732, each user's question counted as cached content.

`queries` says what a user sends (lengths are fixed, as inference-perf's default std of 0):
* `repeat` (default, inference-perf's single-turn mode): the same question every time.
* `fresh`: a new question every time; only the tenant context is shared.
* `multiturn`: round r's prompt is round r-1's prompt, its answer and a new question
  (inference-perf's later `enable_multi_turn_chat`). Divergence: the trace cannot make round r
  wait for round r-1's answer, so at a high rate a round can arrive before the previous one is
  done; and the answer's tokens are unique to its request in a replay, so only the previous
  prompt's full blocks can hit.

Analytic infinite-cache token hit rate, cache mode, engine block = trace block = b, N >= K
requests (K = T*U; every user then appears in the first K requests), with C the context, Q the
question, A the answer, L = C + Q, and F(x) = floor(x / b) * b (the full blocks of x tokens):
* repeat:    H = (T*(U-1)*F(C) + (N-K)*F(L-1)) / (N*L)
  (the first cycle: each tenant's first prompt misses, its other U-1 hit the context's full
  blocks; later every prompt was seen whole, and vLLM's last-token rule leaves F(L-1).)
* fresh:     H = (N-T)*F(C) / (N*L)
* multiturn: with L_r = C + r*(Q+A) + Q, R = N div K, m = N mod K,
  H = (T*(U-1)*F(C) + K*sum_{r=1..R-1} F(L_{r-1}) + m*F(L_{R-1}))
      / (K*sum_{r=0..R-1} L_r + m*L_R)
Defaults (repeat, N = 7,500, b = 16): (150*4*6,000 + 6,750*7,184) / (7,500*7,200) = 0.964667.
`expected_hit_rate` computes these; tests/test_gen_b2b.py checks them against cache mode.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from kvcore.engine.gen import (
    MAX_REQUESTS,
    MAX_TRACE_BLOCKS,
    _at_most,
    _blocks,
    _check_last_arrival,
    _float,
    _Ids,
    _ints,
)
from kvcore.errors import InputError
from kvcore.traces.formats import MAX_REQUEST_TOKENS

QUERIES = ("repeat", "fresh", "multiturn")


def parse_qps(text: str) -> tuple[float, ...]:
    """`--qps`: one rate (`10`) or a ramp of stages (`3,10,30,60`); an `InputError` naming it."""
    try:
        rates = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise InputError(f"must be a number or numbers separated by commas, got {text!r}",
                         field="qps") from None
    for r in rates:
        _float("qps", r, positive=True)
    return rates


def _arrivals(rng: random.Random, n: int, rates: Sequence[float], stage_s: float) -> list[float]:
    """Poisson arrivals whose rate is `rates[k]` during stage k (`stage_s` seconds each; the last
    rate holds on). A gap that crosses a stage's end restarts at the end with the next rate:
    the exponential is memoryless, so that is exactly a piecewise-constant Poisson process."""
    t, k, out = 0.0, 0, [0.0]   # the first request at 0, as gen.py's generators
    while len(out) < n:
        end = (k + 1) * stage_s if k < len(rates) - 1 else math.inf
        nxt = t + rng.expovariate(rates[k])
        if nxt >= end and end != math.inf:      # (a gap of inf, at 1e-320 qps, is no stage's end)
            t, k = end, k + 1
            continue
        t = nxt
        out.append(t)
    return out


def _lengths(queries: str, n: int, k: int, context: int, query: int, answer: int) -> list[int]:
    """Prompt length of request i; in multiturn it grows by a question and an answer a round."""
    if queries != "multiturn":
        return [context + query] * n
    return [context + (i // k) * (query + answer) + query for i in range(n)]


def _check(tenants: int, users: int, context_tokens: int, query_tokens: int,
           output_tokens: int, requests: int, qps: Sequence[float], stage_s: float,
           queries: str, block_size: int) -> list[int]:
    _ints(tenants=(tenants, 1), users=(users, 1), context_tokens=(context_tokens, 0),
          query_tokens=(query_tokens, 1), output_tokens=(output_tokens, 1),
          block_size=(block_size, 1))
    if isinstance(requests, bool) or not isinstance(requests, int) or requests < 1:
        raise InputError(f"must be an integer >= 1, got {requests!r}", field="requests")
    _at_most("requests", requests, MAX_REQUESTS, "requests")
    _at_most("tenants x users =", tenants * users, MAX_REQUESTS,
             "tenants" if tenants > users else "users")
    if queries not in QUERIES:
        raise InputError(f"must be one of {', '.join(QUERIES)}, got {queries!r}",
                         field="queries")
    if not qps:
        raise InputError("give at least one rate", field="qps")
    for r in qps:
        _float("qps", r, positive=True)
    _float("stage_s", stage_s, positive=True)
    k = tenants * users
    lengths = _lengths(queries, requests, k, context_tokens, query_tokens, output_tokens)
    # The longest prompt is the last (multiturn grows); the first is context + query.
    _at_most("the longest prompt of", lengths[-1], MAX_REQUEST_TOKENS,
             "requests" if queries == "multiturn" else "context_tokens")
    _at_most("the trace's block count", sum(-(-n // block_size) for n in lengths),
             MAX_TRACE_BLOCKS, "requests")
    return lengths


def b2b(*, tenants: int = 150, users: int = 5, context_tokens: int = 6000,
        query_tokens: int = 1200, output_tokens: int = 1000, requests: int = 7500,
        qps: Sequence[float] = (10.0,), stage_s: float = 60.0, queries: str = "repeat",
        block_size: int = 16, seed: int = 0) -> list[dict]:
    """The trace's records in arrival order; `tenant` and `user` (0..T*U-1, user u of tenant t
    is t*U + u) say whose request it is, for analysis (routers see only the hash ids)."""
    qps = tuple(qps)
    lengths = _check(tenants, users, context_tokens, query_tokens, output_tokens, requests,
                     qps, stage_s, queries, block_size)
    rng = random.Random(seed)
    ids = _Ids()
    bs = block_size
    n_ctx = context_tokens // bs    # the context's full blocks: the only content users share
    contexts = [ids.take(n_ctx) for _t in range(tenants)]
    # inference-perf builds the prompts tenant by tenant, then shuffles them once.
    slots = [(t, u) for t in range(tenants) for u in range(users)]
    rng.shuffle(slots)
    # One token stream per user: the tenant's context, then the user's own content. A block
    # past the context's full blocks (the one where the context ends included) is the user's.
    streams = {s: list(contexts[s[0]]) for s in slots} if queries == "multiturn" else {}
    repeat_ids: dict[tuple[int, int], list[int]] = {}
    times = _arrivals(rng, requests, qps, stage_s)
    _check_last_arrival(times[-1] * 1000.0, "qps")
    recs = []
    for i, (t_s, prompt_len) in enumerate(zip(times, lengths)):
        slot = slots[i % len(slots)]
        n_blocks = -(-prompt_len // bs)
        if queries == "repeat":
            # The same prompt each time, its last partial block included: one id list per user.
            if slot not in repeat_ids:
                repeat_ids[slot] = contexts[slot[0]] + ids.take(n_blocks - n_ctx)
            hash_ids = repeat_ids[slot]
        elif queries == "fresh":
            hash_ids = contexts[slot[0]] + ids.take(n_blocks - n_ctx)
        else:
            stream = streams[slot]
            if len(stream) < prompt_len // bs:
                stream += ids.take(prompt_len // bs - len(stream))
            # A partial last block gets a fresh id: the next round has other tokens there.
            hash_ids = _blocks(stream, prompt_len, bs, ids)
            # The next round contains this prompt and its answer: their full blocks are stream.
            grown = (prompt_len + output_tokens) // bs
            if len(stream) < grown:
                stream += ids.take(grown - len(stream))
        recs.append({"timestamp": round(t_s * 1000.0, 3), "input_length": prompt_len,
                     "output_length": output_tokens, "block_size": bs, "hash_ids": hash_ids,
                     "tenant": slot[0], "user": slot[0] * users + slot[1]})
    return recs


def expected_hit_rate(*, tenants: int = 150, users: int = 5, context_tokens: int = 6000,
                      query_tokens: int = 1200, output_tokens: int = 1000,
                      requests: int = 7500, queries: str = "repeat",
                      block_size: int = 16) -> float:
    """The docstring's infinite-cache token hit rate (cache mode, engine block = block_size,
    requests >= tenants * users)."""
    t, k, n, b = tenants, tenants * users, requests, block_size
    if n < k:
        raise ValueError("the analytic hit rate needs requests >= tenants * users")

    def f(x: int) -> int:
        return x // b * b

    c, q = context_tokens, query_tokens
    first = t * (users - 1) * f(c)
    if queries == "repeat":
        return (first + (n - k) * f(c + q - 1)) / (n * (c + q))
    if queries == "fresh":
        return (n - t) * f(c) / (n * (c + q))
    lens = _lengths("multiturn", n, k, c, q, output_tokens)
    # Request i >= K hits the full blocks of its user's previous prompt, request i - K.
    hits = first + sum(f(lens[i - k]) for i in range(k, n))
    return hits / sum(lens)
