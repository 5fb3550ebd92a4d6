"""`sglang`: SGLang model gateway's `cache_aware` policy: the least-loaded worker when the load is
imbalanced, else the worker holding the longest matching prefix in the router's history tree,
or the least-loaded worker when the match is too short.

Source: sgl-project/sglang `sgl-model-gateway/src/policies/cache_aware.rs` @053b63f and
@b93974f (the newer builds: below the threshold, the min-load worker; older builds took the
smallest tree), `policies/tree.rs` @03744db and older (the multi-tenant radix tree; which
worker a matched node names), defaults from
`bindings/python/sglang_router/router_args.py` (CLI) and `policies/mod.rs`
(`CacheAwareConfig::default()`, the library). Per request, with load = requests in flight:

* imbalanced iff max load - min load > balance_abs_threshold AND
  max load > balance_rel_threshold * min load (both; some docs say or) -> the first worker with
  the lowest load; the tree still records the prompt for it;
* else the longest prefix of the prompt in the tree (any worker's); match rate = matched /
  prompt length; rate > cache_threshold -> the worker the tree names for the deepest matched
  node (the one whose route created it, while it still holds it: `HistoryLRU.owner_of`), else
  the first lowest-load worker; the prompt is recorded for the chosen worker;
* every `eviction_interval_secs` each worker's part of the tree is cut to `max_tree_size`
  characters by dropping its least recently used leaves.

Defaults: preset=cli: cache_threshold 0.3, balance_abs_threshold 64, balance_rel_threshold
1.5, eviction_interval_secs 120, max_tree_size 2**26; preset=library: 0.5 / 32 / 1.1 / 30 /
10,000 (for every option not given explicitly).

Divergences: upstream's tree holds characters of the request text; kvcli's holds engine
blocks (chained hashes: a node is a hash, `HistoryLRU`), so a match is a whole number of
blocks, the rate is matched tokens / prompt tokens, and a worker's tree size in characters
is taken as 4 per token (max_tree_size // (4 * block size) blocks). Eviction runs at the first
decision after each interval boundary (nothing reads the tree in between). When a node's
named worker no longer holds it, upstream takes the first key of a hash map; kvcli the
lowest-numbered holder. A match does not refresh the tree's LRU (upstream refreshes the named
worker's node on 1 match in 8; the chosen worker's insert refreshes its path either way).
Not modelled: smg-project/smg's later cache_aware (KV token-usage spread and ceiling
triggers, off by default; event-fed indexes; a relative gate against the fleet mean).
"""

from __future__ import annotations

from typing import Any, ClassVar

from kvcore.cluster.history import HistoryLRU, predicted_tokens
from kvcore.cluster.router import Decision, Option, Router, RouteRequest, register
from kvcore.cluster.view import ClusterView

CHARS_PER_TOKEN = 4
LIBRARY = {"cache_threshold": 0.5, "balance_abs_threshold": 32, "balance_rel_threshold": 1.1,
           "eviction_interval_secs": 30.0, "max_tree_size": 10_000}


def is_imbalanced(loads: list[int], abs_threshold: int, rel_threshold: float) -> bool:
    """SGLang's test: BOTH the absolute and the relative gap exceed their thresholds."""
    lo, hi = min(loads), max(loads)
    return hi - lo > abs_threshold and hi > rel_threshold * lo


@register
class SglangCacheAware(Router):
    name = "sglang"
    OPTIONS: ClassVar[dict[str, Option]] = {
        "preset": Option(str, "cli", "cli (the router's command-line defaults) or library "
                         "(CacheAwareConfig::default())", choices=("cli", "library")),
        "cache_threshold": Option(float, 0.3, "minimum prefix match rate for cache routing",
                                  lo=0, hi=1),
        "balance_abs_threshold": Option(int, 64, "imbalance: max - min load above this ...",
                                        lo=0),
        "balance_rel_threshold": Option(float, 1.5, "... and max above this times min", lo=0),
        "eviction_interval_secs": Option(float, 120.0, "seconds between tree evictions",
                                         above=0),
        "max_tree_size": Option(int, 2**26, "characters per worker's tree after eviction",
                                lo=0),
    }

    @classmethod
    def settle(cls, opts: dict[str, Any], given: frozenset[str]) -> None:
        """`preset=library`: the library's value for every option not set explicitly (an
        explicit `cache_threshold=0.3`, the CLI default, stays 0.3)."""
        if opts["preset"] == "library":
            opts.update({k: v for k, v in LIBRARY.items() if k not in given})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        o = self.opts
        self.tree = HistoryLRU(self.n, track_owner=True)
        self.max_blocks = o["max_tree_size"] // (CHARS_PER_TOKEN * self.block_size)
        self.next_eviction_ms = o["eviction_interval_secs"] * 1000.0

    def _evict(self, now_ms: float) -> None:
        interval = self.opts["eviction_interval_secs"] * 1000.0
        if now_ms < self.next_eviction_ms:
            return
        for replica in range(self.n):
            self.tree.trim(replica, self.max_blocks)
        self.next_eviction_ms = (now_ms // interval + 1) * interval

    def route(self, req: RouteRequest, view: ClusterView) -> Decision:
        o = self.opts
        self._evict(view.now_ms)
        loads = view.in_flight
        min_load = loads.index(min(loads))        # Rust's min_by_key: the first minimum
        hashes = req.block_hashes
        own = [self.tree.match(i, hashes) for i in range(self.n)]
        scores = {"in_flight": [float(x) for x in loads],
                  "match_rate": [k * self.block_size / req.prompt_len if req.prompt_len
                                 else 0.0 for k in own]}
        if is_imbalanced(loads, o["balance_abs_threshold"], o["balance_rel_threshold"]):
            best, reason = min_load, "imbalance"
        else:
            deepest = self.tree.longest(hashes)
            rate = deepest * self.block_size / req.prompt_len if req.prompt_len else 0.0
            if rate > o["cache_threshold"]:
                # the node's named tenant, not its latest router: a prefix stays with the
                # worker that first took it even after the imbalance or below-threshold path
                # sent copies elsewhere (tree.rs; before, kvcli followed the latest route)
                best, reason = self.tree.owner_of(hashes[deepest - 1]), "best_prefix"
            else:
                best, reason = min_load, "below_threshold"
        return Decision(best, reason, scores=scores,
                        predicted_hit=predicted_tokens(own[best], self.block_size,
                                                       req.prompt_len))

    def on_routed(self, req: RouteRequest, replica: int, view: ClusterView) -> None:
        # last to first: a path's leaf is then older than its ancestors, so LRU order drops
        # leaves first, as the tree's leaf eviction does
        self.tree.add(replica, reversed(req.block_hashes), view.now_ms)
