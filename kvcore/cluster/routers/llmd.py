"""`llmd`: llm-d's default scheduling profile: a weighted sum of the queue, KV-utilization and
approximate prefix-cache scores, the highest total wins (random among equal totals).

Source: llm-d/llm-d-inference-scheduler (module `github.com/llm-d/llm-d-router`) @520af478,
`pkg/epp/framework/plugins/`:
* `scheduling/scorer/queuedepth/queue.go` (weight 2): (max q - q_i) / (max q - min q) over the
  scraped waiting queues, 1.0 for all when every queue is equal;
* `scheduling/scorer/kvcacheutilization/kvcache_utilization.go` (weight 2): 1 - kv_usage_i;
* `scheduling/scorer/prefix/plugin.go` (weight 3): matched / total blocks, from
  `requestcontrol/dataproducer/approximateprefix/{plugin,indexer,hashing,types}.go`: the prompt's
  chained block hashes (at most `maxPrefixBlocksToMatch` = 256); walking them from the first, every
  pod whose LRU holds the block counts one, until no pod holds a block (a pod missing an early
  block still counts later ones, as upstream). After the decision (`PreRequest`) the prompt's
  hashes are added to the chosen pod's LRU, first to last; the LRU holds the pod's
  `CacheNumGPUBlocks` entries (autoTune: vLLM's `num_gpu_blocks`, the pool with its null
  block) or 31,250;
* `scheduling/scorer/loadaware/load_aware.go` (not in the default profile; weight 0 here):
  0.5 at q = 0, else 0.5 * (1 - min(q, 128) / 128);
* the profile (`pkg/epp/config/loader/defaults.go` when no config is given) sums
  weight * clamp(score, 0, 1) (`pkg/epp/scheduling/scheduler_profile.go`); the
  `max-score-picker` (`scheduling/picker/maxscore/picker.go`) shuffles, then stable-sorts by
  total, highest first.

Divergences: upstream hashes the prompt's characters (blocks of blockSizeTokens x 4 chars,
the last partial block hashed too); kvcli has token blocks, so a router block is m =
block_size_tokens / engine block size engine blocks and its hash is every m-th of
`block_hashes` (chained, so it names the prefix); a trailing part shorter than a router block
is not hashed. autoTune (default, as upstream) takes the engine's block size and each
replica's `num_blocks` from vLLM's cache config, else `block_size_tokens` (a multiple of the
engine block) and `lru_capacity_per_server`. Metrics are the cluster's scraped samples;
shuffling uses the router's seeded generator.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from kvcore.cluster.history import HistoryLRU, predicted_tokens, router_hashes
from kvcore.cluster.router import Decision, Option, Router, RouteRequest, register
from kvcore.cluster.view import ClusterView
from kvcore.errors import InputError

if TYPE_CHECKING:
    import random

LOAD_AWARE_THRESHOLD = 128      # load_aware.go's default queue threshold


def queue_scores(waiting: Sequence[int]) -> list[float]:
    """llm-d's queue-scorer: the emptiest queue 1.0, the fullest 0.0, all 1.0 when equal."""
    lo, hi = min(waiting), max(waiting)
    if hi == lo:
        return [1.0] * len(waiting)
    return [(hi - q) / (hi - lo) for q in waiting]


def kv_util_scores(usage: Sequence[float]) -> list[float]:
    """llm-d's kv-cache-utilization-scorer: the free fraction of each KV cache."""
    return [1.0 - u for u in usage]


def load_aware_scores(waiting: Sequence[int], threshold: int = LOAD_AWARE_THRESHOLD
                      ) -> list[float]:
    """llm-d's load-aware-scorer: 0.5 for an empty queue, falling to 0 at `threshold`."""
    return [0.5 if q == 0 else 0.5 * (1.0 - min(q, threshold) / threshold) for q in waiting]


def weighted_total(parts: dict[str, tuple[float, list[float]]], n: int) -> list[float]:
    """Σ weight * clamp01(score) per replica over the scorers in `parts` (name -> (weight,
    scores))."""
    total = [0.0] * n
    for weight, scores in parts.values():
        if weight:
            for i, s in enumerate(scores):
                total[i] += weight * min(1.0, max(0.0, s))
    return total


def max_score_pick(total: list[float], rng: random.Random) -> tuple[int, bool]:
    """llm-d's max-score picker: shuffle, stable sort by total (highest first), take the first.
    Returns the replica and whether another replica had the same total."""
    order = list(range(len(total)))
    rng.shuffle(order)
    order.sort(key=lambda i: -total[i])
    best = order[0]
    return best, total.count(total[best]) > 1


def scored_decision(parts: dict[str, tuple[float, list[float]]], n: int,
                    rng: random.Random, predicted: list[int]) -> Decision:
    """The max-score pick over the weighted parts, with every scorer's scores and the total."""
    total = weighted_total(parts, n)
    best, tie = max_score_pick(total, rng)
    scores = {name: list(s) for name, (_, s) in parts.items()}
    scores["total"] = total
    return Decision(best, "tie" if tie else "best_score", scores=scores,
                    predicted_hit=predicted[best])


@register
class LlmdRouter(Router):
    name = "llmd"
    draws_random = True
    reads_metrics = True
    OPTIONS: ClassVar[dict[str, Option]] = {
        "queue_weight": Option(float, 2.0, "queue-scorer weight", lo=0),
        "kv_util_weight": Option(float, 2.0, "kv-cache-utilization-scorer weight", lo=0),
        "prefix_weight": Option(float, 3.0, "prefix-cache-scorer weight", lo=0),
        "load_aware_weight": Option(float, 0.0, "load-aware-scorer weight (not in the "
                                    "default profile)", lo=0),
        "auto_tune": Option(bool, True, "take the block size and LRU capacity from the engine "
                            "(llm-d autoTune)"),
        "block_size_tokens": Option(int, 16, "router block in tokens when auto_tune=false "
                                    "(a multiple of the engine block size)", lo=1,
                                    only_when=("auto_tune", False)),
        "lru_capacity_per_server": Option(int, 31250, "router blocks per replica's LRU when "
                                          "auto_tune=false", lo=1,
                                          only_when=("auto_tune", False)),
        "max_prefix_blocks_to_match": Option(int, 256, "router blocks hashed per prompt", lo=1),
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        o = self.opts
        if o["auto_tune"]:
            self.m = 1
        else:
            bst = o["block_size_tokens"]
            if bst <= 0 or bst % self.block_size:
                raise InputError(f"router llmd option block_size_tokens: {bst} is not a "
                                 f"positive multiple of the engine block size "
                                 f"{self.block_size}", field="router_opt")
            self.m = bst // self.block_size
        self.index: HistoryLRU | None = None     # sized at the first decision (autoTune)

    def _hashes(self, req: RouteRequest) -> list[int]:
        return router_hashes(req.block_hashes, self.m)[:self.opts["max_prefix_blocks_to_match"]]

    def _index(self, view: ClusterView) -> HistoryLRU:
        if self.index is None:
            # autoTune reads vLLM's `num_gpu_blocks` (the `cache_config_info` metric): the
            # whole pool, its null block included, one more than the view's usable blocks
            cap = view.num_blocks + 1 if self.opts["auto_tune"] and view.num_blocks > 0 \
                else self.opts["lru_capacity_per_server"]
            self.index = HistoryLRU(self.n, capacity=cap)
        return self.index

    def matched(self, hashes: list[int], index: HistoryLRU) -> list[int]:
        """Upstream's walk: per block, every replica holding it counts one, until no replica
        holds the block."""
        counts = [0] * self.n
        for h in hashes:
            held = index.holders_of(h)
            if not held:
                break
            for r in held:
                counts[r] += 1
        return counts

    def route(self, req: RouteRequest, view: ClusterView) -> Decision:
        o = self.opts
        hashes = self._hashes(req)
        matched = self.matched(hashes, self._index(view))
        total = len(hashes)
        waiting = [m.waiting for m in view.metrics]
        parts = {
            "queue-scorer": (o["queue_weight"], queue_scores(waiting)),
            "kv-cache-utilization-scorer": (o["kv_util_weight"],
                                            kv_util_scores([m.kv_usage for m in view.metrics])),
            "prefix-cache-scorer": (o["prefix_weight"],
                                    [k / total if total else 0.0 for k in matched]),
        }
        if o["load_aware_weight"]:
            parts["load-aware-scorer"] = (o["load_aware_weight"], load_aware_scores(waiting))
        block_tokens = self.m * self.block_size
        predicted = [predicted_tokens(k, block_tokens, req.prompt_len) for k in matched]
        return scored_decision(parts, self.n, self.rng, predicted)

    def on_routed(self, req: RouteRequest, replica: int, view: ClusterView) -> None:
        self._index(view).add(replica, self._hashes(req), view.now_ms)
