"""`aibrix`: AIBrix gateway's `prefix-cache` routing: among the pods whose routing history matches
the prompt's prefix, the best match whose running count is within one standard deviation of the
mean, else the least-loaded pod; only the least-loaded pods are candidates when the load is
imbalanced.

Source: vllm-project/aibrix @e3e10f9e `pkg/plugins/gateway/algorithms/prefix_cache.go`
(`routeOriginal`, `getTargetPodListOnLoadImbalance`, `getTargetPodFromMatchedPods`),
`least_request.go` (`selectTargetPodWithLeastRequestCount`), `util.go` (`standardDeviation`:
the sample deviation, n - 1), `pkg/utils/prefixcacheindexer/hash.go` (`PrefixHashTable`) over
`pkg/utils/lrustore`. Code defaults (its README says otherwise; the code wins): imbalance gap 8
(`AIBRIX_PREFIX_CACHE_POD_RUNNING_REQUEST_IMBALANCE_ABS_COUNT`), standard-deviation factor 1,
200,000 blocks, entries idle 20 min evicted. Per request, with r_i the pod's running requests
as the gateway counts them (`RealtimeNumRequestsRunning`):

* if max r - min r > 8, the candidates are the pods with the minimum r (else all pods);
* walk the prompt's block hashes from the first while some candidate holds every block so far;
  each such pod's match percent is (matched blocks * 100) // total blocks (integer, as upstream);
* shuffle the matched pods, stable-sort by match percent (desc) then r (asc), and take the first
  with r_i <= mean(r) + k * sd(r) over all pods;
* else (no match, or none passes) the pod with the fewest running requests, random among ties;
* the prompt's hashes are recorded for the chosen pod (`AddPrefix`).

Divergences: upstream hashes the prompt's characters in blocks of 4 (a character tokenizer);
kvcli approximates with its engine blocks (`block_hashes`), so a match is a whole number of
engine blocks. The table is one LRU of 200,000 block hashes shared by all pods (the code's
store is keyed by block hash; a lookup does not refresh an entry, an `AddPrefix` does), its
idle entries dropped at each decision (upstream sweeps every second). r_i is the router's
in-flight count. The shuffle and the tie draw use the router's seeded generator. A newer
upstream gate (max > 2 * (mean + 1) and gap >= 8, in a later commit than the one read) is not
used.
"""

from __future__ import annotations

import statistics
from typing import Any, ClassVar

from kvcore.cluster.history import BlockTable, predicted_tokens
from kvcore.cluster.router import Decision, Option, Router, RouteRequest, register
from kvcore.cluster.view import ClusterView


def sigma_gate(loads: list[int], k: float) -> float:
    """The most running requests a matched pod may have: mean + k * sample deviation."""
    mean = sum(loads) / len(loads)
    sd = statistics.stdev(loads) if len(loads) > 1 else 0.0
    return mean + k * sd


@register
class AibrixPrefixCache(Router):
    name = "aibrix"
    draws_random = True
    OPTIONS: ClassVar[dict[str, Option]] = {
        "imbalance_abs_count": Option(int, 8, "imbalance: max - min running above this "
                                      "restricts candidates to the least running", lo=0),
        "standard_deviation_factor": Option(float, 1.0, "k in r_i <= mean + k * sd", lo=0),
        "block_number": Option(int, 200_000, "blocks in the shared history table", lo=1),
        "eviction_duration_mins": Option(float, 20.0, "minutes an untouched block is kept",
                                         lo=0),
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        o = self.opts
        self.table = BlockTable(o["block_number"], o["eviction_duration_mins"] * 60_000.0)

    def _least_request(self, loads: list[int]) -> int:
        lowest = min(loads)
        tied = [i for i, x in enumerate(loads) if x == lowest]
        return tied[0] if len(tied) == 1 else self.rng.choice(tied)

    def route(self, req: RouteRequest, view: ClusterView) -> Decision:
        o = self.opts
        self.table.expire(view.now_ms)
        loads = list(view.in_flight)
        candidates = list(range(self.n))
        imbalanced = max(loads) - min(loads) > o["imbalance_abs_count"]
        if imbalanced:
            candidates = [i for i in range(self.n) if loads[i] == min(loads)]
        hashes = req.block_hashes
        matched = self.table.match(hashes, candidates)
        total = len(hashes)
        percent = {r: k * 100 // total for r, k in matched.items()}
        best = None
        if matched:
            order = sorted(matched)
            self.rng.shuffle(order)
            order.sort(key=lambda r: (-percent[r], loads[r]))
            limit = sigma_gate(loads, o["standard_deviation_factor"])
            best = next((r for r in order if loads[r] <= limit), None)
        if best is not None:
            reason = "best_prefix"
        else:
            best = self._least_request(loads)
            reason = "sigma_gate" if matched else "least_load"
        if imbalanced:
            reason = "imbalance"        # the candidates were cut to the least running
        scores = {"running": [float(x) for x in loads],
                  "match_percent": [float(percent.get(i, 0)) for i in range(self.n)]}
        return Decision(best, reason, scores=scores,
                        predicted_hit=predicted_tokens(matched.get(best, 0), self.block_size,
                                                       req.prompt_len))

    def on_routed(self, req: RouteRequest, replica: int, view: ClusterView) -> None:
        self.table.add(replica, req.block_hashes, view.now_ms)
