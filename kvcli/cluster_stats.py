"""`kvcli stats DIR`: the stats of each replica of a `kvcli cluster --events DIR` run.

DIR is the folder `--events` wrote (one sub-folder per router) or one router's sub-folder;
each `replica-K.events.jsonl` in it is read as `kvcli stats` reads one stream. The JSON
document is `{"cluster": DIR, "router": NAME, "replicas": [report, ...]}` (each report as
docs/stats.md); the table has one row per replica.
"""

from __future__ import annotations

import os
import re

from kvcli import output
from kvcore.errors import InputError

_REPLICA = re.compile(r"replica-(\d+)\.events\.jsonl(\.gz)?$")
_ANY_STREAM = re.compile(r"replica-(\d+)\.(events|vllm)\.jsonl(\.gz)?$")   # (either stream)


def replica_number(name: str) -> int | None:
    """K of a file named as `kvcli cluster --events` names replica K's streams, else None."""
    m = _ANY_STREAM.match(name)
    return int(m.group(1)) if m else None


def replica_streams(folder: str) -> tuple[str, list[str]]:
    """(the router's folder, its replicas' streams in replica order)."""
    def streams(d: str, check: bool = True) -> list[str]:
        found = sorted((int(m.group(1)), f) for f in os.listdir(d) if (m := _REPLICA.match(f)))
        for want, (k, f) in enumerate(found if check else ()):
            # the table numbers its rows 0..N-1: a missing replica-0 showed replica-1's
            # stream as replica 0, and a stream in two files (.gz and not) counted twice
            if k != want:
                what = (f"two streams of replica {k}" if k < want else
                        f"no replica-{want}.events.jsonl (found {f})")
                raise InputError(f"{what}: a kvcli cluster --events folder holds one stream "
                                 "per replica, replica-0 to replica-(N-1)", path=d)
        return [os.path.join(d, f) for _, f in found]

    mine = streams(folder)
    if mine:
        return folder, mine
    routers = sorted(d for d in os.listdir(folder)
                     if os.path.isdir(os.path.join(folder, d))
                     and streams(os.path.join(folder, d), check=False))
    if not routers:
        raise InputError("is a directory, not a file, and holds no replica-K.events.jsonl "
                         "(the streams kvcli cluster --events writes)", path=folder)
    if len(routers) > 1:
        raise InputError(f"holds the streams of {len(routers)} routers "
                         f"({', '.join(routers)}): give one, e.g. "
                         f"{os.path.join(folder, routers[0])}", path=folder)
    sub = os.path.join(folder, routers[0])
    return sub, streams(sub)


def run_cluster_stats(folder: str, *, as_json: bool, **options) -> None:
    from kvcli.commands.stats import compute

    where, files = replica_streams(folder)
    reports = []
    with output.progress(len(files), "replicas") as advance:
        for f in files:
            reports.append(compute(f, None, **options))
            advance(1)
    output.emit(cluster_stats_view(where, reports), as_json=as_json)


def cluster_stats_view(where: str, reports: list[dict]) -> output.View:
    def pct(x) -> str:
        return "" if x is None else f"{100 * x:.2f}%"

    rows = []
    for i, r in enumerate(reports):
        reuse, ev, miss = r["reuse"], r["eviction"], r["misses"]["tokens"]
        rows.append((i, reuse["requests"], reuse["prompt_tokens"], reuse["hit_tokens"],
                     pct(reuse["hit_rate"]), ev["evictions"], pct(ev["regret"]["fraction"]),
                     pct(r["memory"]["peak_usage"]), r["preemption"]["preemptions"],
                     miss["cold"], miss["evicted"]))
    table = output.Table(f"Replicas: {where}",
                         ("replica", "requests", "prompt tokens", "hit tokens", "hit rate",
                          "evictions", "regret", "peak usage", "preemptions",
                          "missed: cold", "missed: evicted"), rows,
                         caption="kvcli stats DIR/replica-K.events.jsonl: one replica in full")
    return output.View({"cluster": where, "router": os.path.basename(os.path.normpath(where)),
                        "replicas": reports}, tables=[table])
