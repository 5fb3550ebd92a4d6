"""The benchmark's table: `kernels.bench`'s JSON document as rows (`COLUMNS`, `rows`) and as
the text `python -m kernels.bench` prints (`format_table`), for `kvcli bench --gpu` too. It
reads a finished document only: no torch, no device.
"""

from __future__ import annotations

COLUMNS = ("case", "kv", "window", "seqs", "tokens", "MB", "new splits", "new us", "new % copy",
           "old splits", "old us", "old % copy", "gather+sdpa us", "sdpa contig us", "err")


def _r(rec: dict | None, key: str, nd: int = 1) -> object:
    return round(rec[key], nd) if rec and key in rec else "-"


def rows(doc: dict) -> list[tuple]:
    """The table's rows. A document written before the two strategies existed (its ``triton``
    was the legacy rule with the merge kernel) shows its numbers as ``old``."""
    out = []
    for c in doc["cases"]:
        if "error" in c:
            out.append((c["case"],) + ("-",) * (len(COLUMNS) - 2) + (c["error"][:60],))
            continue
        strategies = c.get("strategies") or {"old": {**c["triton"],
                                                     "num_splits": c["num_splits"]}}
        new, old = strategies.get("new"), strategies["old"]
        out.append((c["case"], c.get("kv_dtype", c["dtype"]), c.get("window") or "-",
                    c["num_seqs"], c["total_tokens"], round(c["bytes"] / 1e6, 1),
                    new["num_splits"] if new else "-", _r(new, "time_us"), _r(new, "pct_copy"),
                    old["num_splits"], _r(old, "time_us"), _r(old, "pct_copy"),
                    _r(c.get("gather_sdpa"), "time_us"), _r(c.get("sdpa_contig"), "time_us"),
                    f"{c['max_err_vs_reference']:.1e}"))
    return out


def format_table(doc: dict) -> str:
    bw = doc["bandwidth"]
    head = (f"{doc['device']} ({doc['sms']} SMs), torch {doc['torch']}, triton {doc['triton']}; "
            f"tables: {doc['tables']}")
    ceiling = (f"copy (read + write): memcpy {bw['memcpy'] / 1e9:.0f} GB/s, triton copy "
               f"{bw['triton_copy'] / 1e9:.0f} GB/s -> '% copy' uses "
               f"{doc['copy_bytes_per_s'] / 1e9:.0f} GB/s; "
               f"read-only stream {bw['read'] / 1e9:.0f} GB/s; new = waves rule + fused merge, "
               f"old = legacy rule + merge kernel")
    lines = [head, ceiling]
    table = [COLUMNS] + [tuple(str(x) for x in r) for r in rows(doc)]
    widths = [max(len(r[i]) for r in table) for i in range(len(COLUMNS))]
    for r in table:
        lines.append("  ".join(x.rjust(w) for x, w in zip(r, widths)))
    return "\n".join(lines)
