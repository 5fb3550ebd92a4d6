"""One router's result (`kvcli cluster --json`: one object per router; docs/cluster.md).

Hit rates count as a single replay does (first admissions past the warm-up); the cluster's
token hit rate is the ratio of the replicas' sums, `request_hit_rate_mean` the mean of the
requests' own rates. The decomposition (`ceiling.py`): `trace_ceiling` - `routed_ceiling` =
`routing_loss`, `routed_ceiling` - `hit_rate` = `capacity_loss`. `duplication`: cached blocks
summed over the replicas over distinct cached blocks, at the end of the run (1.0: no block
cached twice). `balance`: the largest replica's share over the mean share, of requests and of
computed prefill tokens (prompt minus hit). `index`: how the router's predicted hits compared
with the true hit of the chosen replica at each decision.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.engine import latency
from kvcore.engine.spec_decode import SpecStats

if TYPE_CHECKING:
    from kvcore.cluster.loop import ClusterLoop

REPLICA_KEYS = ("requests", "rejected", "prompt_tokens", "hit_tokens", "hit_rate",
                "evictions", "preemptions", "peak_usage", "mean_usage", "steps", "sim_time_s")


def router_result(name: str, opts: dict, loop: ClusterLoop, wall_time_s: float) -> dict:
    reps = loop.replicas
    sums = [r.ctx.summary for r in reps]
    prompt = sum(s.prompt_tokens for s in sums)
    hit = sum(s.hit_tokens for s in sums)
    counted = sum(s.counted_requests for s in sums)
    counted_ids = [rid for r in reps for rid, rec in r.ctx.records.items()
                   if rec.hit_tokens is not None and rec.pos >= r.ctx.warmup_start]
    trace_hit, routed_hit = loop.ceilings.totals(counted_ids)

    def rate(x: int) -> float:
        return x / prompt if prompt else 0.0

    hit_rate = rate(hit)
    computed = [s.prompt_tokens - s.hit_tokens for s in sums]
    out: dict = {
        "router": name, "router_opts": opts, "replicas_n": len(reps),
        "hit_rate": hit_rate,
        "request_hit_rate_mean": (sum(r.ctx.request_hit_sum for r in reps) / counted
                                  if counted else 0.0),
        "hit_tokens": hit, "prompt_tokens": prompt, "counted_requests": counted,
        "trace_ceiling": rate(trace_hit), "routed_ceiling": rate(routed_hit),
        "routing_loss": rate(trace_hit - routed_hit),
        "capacity_loss": rate(routed_hit) - hit_rate,
        "duplication": _duplication(loop),
        "balance": {"requests": _max_over_mean([s.requests for s in sums]),
                    "computed_prefill_tokens": _max_over_mean(computed)},
        "preemptions": sum(s.preemptions for s in sums),
        "evictions": sum(s.evictions for s in sums),
        "rejected": sum(s.rejected for s in sums),
        "decisions": dict(sorted(loop.log.reasons.items())),
        "index": {"predicted": loop.log.predicted, "false_hit": loop.log.false_hit,
                  "false_miss": loop.log.false_miss,
                  "regret_tokens": loop.log.regret_tokens},
        "latency": None,
        "sim_time_s": max(s.sim_time_s for s in sums),
        "wall_time_s": round(wall_time_s, 3),
        "replicas": [],
    }
    ctx0 = reps[0].ctx
    if all(x.offload is not None for x in sums):
        # the CPU tier (docs/offload.md): its hits on top of the GPU's, summed
        cpu = [x.offload["counted_cpu_hit_tokens"] for x in sums]   # type: ignore[index]
        out["offload"] = {"cpu_hit_tokens": sum(cpu), "hit_rate_with_cpu": rate(hit + sum(cpu))}
    if all(x.spec_decode is not None for x in sums):
        # speculative decoding (docs/replay-engine.md): vLLM's spec stats over every replica
        out["spec_decode"] = SpecStats.summed([x.spec_decode for x in sums]).as_dict()
    if latency.applies(ctx0.cfg.mode, ctx0.cfg.arrivals):
        # every replica's counted finished requests, as each summary folded them
        out["latency"] = latency.columns_summary(
            {k: [v for r in reps for v in r.ctx.book.latency[k]] for k in latency.KEYS},
            ctx0.cost.uncalibrated)
    for i, (r, s) in enumerate(zip(reps, sums, strict=True)):
        row = {"replica": i}
        row.update((k, getattr(s, k)) for k in REPLICA_KEYS)
        row["computed_prefill_tokens"] = computed[i]
        if s.offload is not None:
            row["cpu_hit_tokens"] = s.offload["counted_cpu_hit_tokens"]
        out["replicas"].append(row)
    return out


def _max_over_mean(values: list[int]) -> float:
    mean = sum(values) / len(values) if values else 0.0
    return max(values) / mean if mean else 0.0


def _duplication(loop: ClusterLoop) -> float:
    total = 0
    union: set[bytes] = set()
    for r in loop.replicas:
        keys = r.ctx.kvm.block_pool.cached_block_hash_to_block.group_map(0).keys()
        total += len(keys)
        union.update(keys)
    return total / len(union) if union else 0.0
