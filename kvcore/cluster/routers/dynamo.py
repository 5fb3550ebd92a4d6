"""`dynamo`: Dynamo's KV router: the worker with the lowest cost, prefill blocks left after the
cached-prefix credit plus the decode blocks it already carries.

Source: ai-dynamo/dynamo `lib/kv-router/src/scheduling/selector/default.rs` @07a6c9c (the cost,
the random tie break, the softmax), `lib/kv-router/src/scheduling/config.rs` @0243c51 (defaults),
the active-sequence accounting of `lib/kv-router/src/sequences/` and the docs "Router Design".
Per worker i, for a request of ISL prompt tokens in blocks of B (the engine's block size):

    cost_i = prefill_load_scale * max(0, raw_prefill_blocks_i - credit_i) + decode_blocks_i
             + decode_active_request_weight * active_requests_i
    raw_prefill_blocks_i = (active_prefill_tokens_i + ISL) / B
    credit_i = overlap_score_credit * overlap_i      (consecutive prompt blocks cached on i)
    decode_blocks_i = |union of the full prompt blocks of i's active requests|
                      + the request's blocks not in that union     (post-admission)

The load is router-local: at routing, the request's uncached tokens (ISL - overlap * B) join
i's active prefill tokens (removed at its first token) and its prompt blocks join i's active
blocks (removed when it finishes). Temperature 0: the lowest cost, a random one among equal
costs; temperature T > 0: sample from softmax(-(cost - min) / ((max - min) * T)). Defaults:
credit 1.0, prefill_load_scale 1.0, temperature 0, active-request weight 0, KV events on; with
`use_kv_events=false` the overlap comes from the router's own routing decisions, each block
forgotten `router_ttl_secs` (120) after it was last routed (the approximate indexer).

Divergences: overlap comes from kvcli's `EventIndex` (GPU tier) fed by the replicas' vLLM KV
events; host/disk and shared-cache credits, the credit decay (0 by default), the router
queue (`router_queue_threshold`) and replica sync are not modelled; the approximate index has
no size pruning. config.rs @0243c51 refuses `overlap_score_credit` above 1.0 (it points to
`prefill_load_scale` instead); kvcli takes any value >= 0, so the credits of earlier releases
(1.5 in Dynamo PR #11714) can still be replayed. The random tie break and the softmax draw use the router's seeded generator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from kvcore.cluster.history import HistoryLRU, predicted_tokens
from kvcore.cluster.router import Decision, Option, Router, RouteRequest, register
from kvcore.cluster.view import ClusterView


def worker_cost(raw_prefill_blocks: float, credit_blocks: float, decode_blocks: float,
                active_requests: int = 0, prefill_load_scale: float = 1.0,
                request_weight: float = 0.0) -> float:
    """Dynamo's cost of one worker (default.rs `worker_logit`, aggregated serving)."""
    return (prefill_load_scale * max(0.0, raw_prefill_blocks - credit_blocks)
            + decode_blocks + request_weight * active_requests)


def softmax_index(costs: list[float], temperature: float, u: float) -> int:
    """The row a uniform draw `u` in [0, 1) picks from softmax over min-max normalized costs
    (lower cost, likelier); every row equally likely when all costs are equal."""
    lo, hi = min(costs), max(costs)
    if lo == hi:
        probs = [1.0] * len(costs)
    else:
        scale = (hi - lo) * temperature
        probs = [math.exp(-(c - lo) / scale) for c in costs]
    total = sum(probs)
    cumulative = 0.0
    for row, p in enumerate(probs):
        cumulative += p / total
        if u <= cumulative:
            return row
    return len(costs) - 1


@dataclass(slots=True)
class _Active:
    """What one routed request charges its worker until it finishes."""

    replica: int
    prefill_tokens: int         # charged until its first token
    hashes: list[int]           # its full prompt blocks, charged until it finishes
    prefilling: bool = True


@register
class DynamoRouter(Router):
    name = "dynamo"
    draws_random = True
    # the default (KV events on) reads the event index; use_kv_events=false ignores it
    needs_events = True
    OPTIONS: ClassVar[dict[str, Option]] = {
        "overlap_score_credit": Option(float, 1.0, "blocks of prefill credited per cached "
                                       "block", lo=0),
        "prefill_load_scale": Option(float, 1.0, "weight of the prefill blocks", lo=0),
        "router_temperature": Option(float, 0.0, "0: lowest cost; > 0: softmax sampling", lo=0),
        "decode_active_request_weight": Option(float, 0.0, "cost per active request", lo=0),
        "use_kv_events": Option(bool, True, "overlap from KV events (false: predicted from "
                                "routing decisions with a TTL)"),
        "router_ttl_secs": Option(float, 120.0, "approximate mode: seconds a routed block "
                                  "is assumed cached", lo=0, only_when=("use_kv_events", False)),
    }

    def uses_events(self) -> bool:
        return bool(self.opts["use_kv_events"])

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.active: dict[str, _Active] = {}
        self.prefill_tokens = [0] * self.n
        self.blocks: list[dict[int, int]] = [{} for _ in range(self.n)]   # hash -> refs
        self.requests = [0] * self.n
        self.approx = None if self.opts["use_kv_events"] else \
            HistoryLRU(self.n, ttl_ms=self.opts["router_ttl_secs"] * 1000.0)
        self.last_overlaps: tuple[str, list[int]] = ("", [])

    def overlaps(self, req: RouteRequest, view: ClusterView) -> list[int]:
        """Consecutive prompt blocks each worker is believed to cache."""
        if self.approx is not None:
            self.approx.expire(view.now_ms)
            return [self.approx.match(i, req.block_hashes) for i in range(self.n)]
        assert view.events is not None, "dynamo with KV events needs the event index"
        return view.events.matches(req.block_hashes)

    def decode_blocks(self, i: int, hashes: set[int]) -> int:
        """i's active blocks with the request admitted (its blocks not yet active added)."""
        active = self.blocks[i]
        # the set's difference with a dict walks the set in C: the same count as a generator
        # over `h not in active` (8 replicas, first 3,000 conversation requests: 9.4% -> 7.4%
        # of the run, py-spy; the lookups, not the loop, are most of it)
        return len(active) + len(hashes.difference(active))

    def costs(self, req: RouteRequest, overlaps: list[int]) -> tuple[list[float], list[float],
                                                                      list[float]]:
        """(cost, raw prefill blocks, decode blocks) per worker."""
        o, bs = self.opts, self.block_size
        raw = [(self.prefill_tokens[i] + req.prompt_len) / bs for i in range(self.n)]
        unique = set(req.block_hashes)
        decode = [float(self.decode_blocks(i, unique)) for i in range(self.n)]
        costs = [worker_cost(raw[i], o["overlap_score_credit"] * overlaps[i], decode[i],
                             self.requests[i], o["prefill_load_scale"],
                             o["decode_active_request_weight"]) for i in range(self.n)]
        return costs, raw, decode

    def route(self, req: RouteRequest, view: ClusterView) -> Decision:
        overlaps = self.overlaps(req, view)
        self.last_overlaps = (req.id, overlaps)
        costs, raw, decode = self.costs(req, overlaps)
        temperature = self.opts["router_temperature"]
        if temperature > 0:
            best = softmax_index(costs, temperature, self.rng.random())
            reason = "sampled"
        else:
            lowest = min(costs)
            tied = [i for i, c in enumerate(costs) if c == lowest]
            best = tied[0] if len(tied) == 1 else self.rng.choice(tied)
            reason = "tie" if len(tied) > 1 else "lowest_cost"
        scores = {"cost": costs, "overlap_blocks": [float(k) for k in overlaps],
                  "prefill_blocks": raw, "decode_blocks": decode}
        return Decision(best, reason, scores=scores,
                        predicted_hit=predicted_tokens(overlaps[best], self.block_size,
                                                       req.prompt_len))

    def on_routed(self, req: RouteRequest, replica: int, view: ClusterView) -> None:
        rid, overlaps = self.last_overlaps
        # the overlap the decision saw (on_routed follows route with nothing in between)
        overlap = (overlaps if rid == req.id else self.overlaps(req, view))[replica]
        uncached = max(0, req.prompt_len - overlap * self.block_size)
        self.active[req.id] = _Active(replica, uncached, list(req.block_hashes))
        self.prefill_tokens[replica] += uncached
        refs = self.blocks[replica]
        for h in set(req.block_hashes):
            refs[h] = refs.get(h, 0) + 1
        self.requests[replica] += 1
        if self.approx is not None:
            self.approx.add(replica, req.block_hashes, view.now_ms)

    def on_first_token(self, rid: str, replica: int, t_ms: float) -> None:
        a = self.active.get(rid)
        if a is not None:
            self._end_prefill(a)

    def on_finished(self, rid: str, replica: int, t_ms: float) -> None:
        a = self.active.pop(rid, None)
        if a is None:
            return
        self._end_prefill(a)       # one that ends with no first token (aborted) too
        refs = self.blocks[a.replica]
        for h in set(a.hashes):
            if refs[h] <= 1:
                del refs[h]
            else:
                refs[h] -= 1
        self.requests[a.replica] -= 1

    def _end_prefill(self, a: _Active) -> None:
        if a.prefilling:
            a.prefilling = False
            self.prefill_tokens[a.replica] -= a.prefill_tokens
