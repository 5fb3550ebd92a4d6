"""`kvcli sweep`'s table (and `sweep report`'s): a row a job, its swept options' values as
`swept_cell` shows them (the plots' legends too) and its metrics formatted."""

from __future__ import annotations

import os
from typing import Any

from kvcli import output
from kvcore.sweep.metrics import METRICS

_PCT = frozenset({"hit_rate", "hit_rate_with_cpu", "routing_loss", "capacity_loss"})


def _fmt(name: str, v: Any) -> Any:
    if v is None:
        return "-"
    if name in _PCT:
        return f"{100 * v:.2f}%"
    if name.endswith("_ms"):
        return f"{v:,.1f}"
    return v


def swept_cell(k: str, v, config: dict) -> str:
    """A swept option's value as the table and the plots' legends show it: a trace's file name;
    "default" where the job's config does not name the key (a line of another grid: it ran at
    its default, which the legends called None), "none" for an option set to none."""
    if k == "trace":
        return os.path.basename(str(v))
    if k not in config:
        return "default"
    if v is None:
        return "none"
    # (a list as Python writes it: "['llmd.prefix_weight=0']")
    return ", ".join(map(str, v)) if isinstance(v, list) else v


def sweep_view(doc: dict, report: str | None = None) -> output.View:
    """The table; ``report``: the results file's name when `sweep report` reads one (it holds
    no grid size: its jobs are the finished ones)."""
    swept, shown = doc["swept"], doc["metrics"]
    rows = []
    for j in doc["jobs"]:
        cells = [swept_cell(k, v, j["config"]) for k, v in j["swept"].items()]
        m = j["metrics"]
        rows.append((j["index"], *cells, *(_fmt(n, None if m is None else m[n])
                                           for n in shown), j["job_id"]))
    title = (f"kvcli sweep ({doc['command']}): {doc['jobs_finished']} of {doc['jobs_total']} "
             "jobs finished") if report is None else (
        f"kvcli sweep report ({doc['command']}): {doc['jobs_finished']} finished job(s) in "
        f"{report} (a results file holds no grid size)")
    table = output.Table(title, ("#", *swept, *(METRICS[n][0] for n in shown), "job id"), rows,
                         caption="- : not finished (or not in the result); rows in the grid's "
                         "order" + ("" if report is None else " (each job's place in its grid)"))
    return output.View(doc, tables=[table])
