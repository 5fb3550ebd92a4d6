"""What a cluster run says beside its results: the cluster options no chosen router reads, and
the replicas' warnings, each said once (plain, or with the router and the replicas that said it).
"""

from __future__ import annotations

from collections.abc import Callable

from kvcore.cluster.loop import ClusterLoop
from kvcore.cluster.options import ClusterOptions
from kvcore.warning_groups import sources_named, warning_groups


def idle_options(copts: ClusterOptions, made: list) -> list[str]:
    """The cluster options given that no chosen router reads (their runs were the same);
    ``made``: (name, the options given, the router) of each chosen router."""
    probes = [probe for _, _, probe in made]
    names = ", ".join(p.name for p in probes)
    out = []
    if copts.kv_event_lag_ms and not any(p.uses_events() for p in probes):
        # the lag delays the events an event-fed router reads: here none reads them
        out.append(f"option kv_event_lag_ms: no effect: no chosen router reads KV events "
                   f"({names})")
    default = ClusterOptions()
    if copts.metrics_interval_ms != default.metrics_interval_ms and not any(
            p.reads_metrics for p in probes):
        # (in cache mode too: samples are taken on the arrivals' timeline; vllm_dp's reset
        # its optimistic counts there)
        out.append(f"option metrics_interval_ms: no effect: no chosen router reads scraped "
                   f"metrics ({names})")
    if copts.seed != default.seed and not any(p.draws_random for p in probes):
        out.append(f"option seed: no effect: no chosen router draws at random ({names})")
    out += [note for p in probes for note in p.idle]
    if copts.replicas == 1 and (len(made) > 1 or any(given for _, given, _ in made)
                                or copts.seed != default.seed):
        out.append("the router, its options and seed change neither where requests go nor the "
                   "hits with 1 replica (only the routers' scores, predictions and decision "
                   "lines)")
    return out


def replica_warnings(router: str, loop: ClusterLoop, seen: list[str],
              say: Callable[[str], None]) -> None:
    """The replicas' warnings, each said once: plain when every replica said it or when it is
    a fact of the whole run (the clock's: every router and replica runs the same one, so
    `--routers a,b,c` says it once, not once a router), else with the router and the
    replicas that said it (1,000 replicas, 128 of them given a request, said the same line
    128 times)."""
    groups = warning_groups((i, r.ctx.summary.warnings) for i, r in enumerate(loop.replicas))
    n = len(loop.replicas)
    run_wide = loop.replicas[0].ctx.cost.uncalibrated_warning()
    lines = [w if len(ids) == n or w == run_wide
             else f"{router} {sources_named('replica', ids)}: {w}" for w, ids in groups]
    for w in lines:
        if w not in seen:
            say(w)
