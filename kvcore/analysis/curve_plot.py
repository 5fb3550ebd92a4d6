"""`kvcli curve --plot FILE.png`: hit rate against capacity (log scale), one line per policy,
the ceiling as a dashed line. matplotlib is imported here only (the 'plot' extra)."""

from __future__ import annotations

from typing import IO

from kvcore.errors import InputError


def write_plot(result, f: IO[bytes]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("--plot needs matplotlib: pip install 'kvcli[plot]'",
                         field="--plot") from None
    fig, ax = plt.subplots(figsize=(8, 5))
    for policy in result.knees:
        pts = [p for p in result.points if p.policy == policy and p.hit_rate is not None]
        ax.plot([p.capacity_blocks for p in pts], [100 * p.hit_rate for p in pts],
                marker="o", markersize=3, label=policy)
    ax.axhline(100 * result.ceiling, linestyle="--", color="grey",
               label=f"ceiling {100 * result.ceiling:.1f}%")
    ax.set_xscale("log")
    ax.set_xlabel(f"capacity (usable blocks of {result.block_size} tokens)")
    ax.set_ylabel("token hit rate (%)")
    ax.set_title(f"{result.trace} ({result.rule} rule, warm-up {result.warmup:g})", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(f, format="png", dpi=120)
    plt.close(fig)
