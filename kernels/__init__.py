"""Paged-attention decode kernels: a Triton kernel and a plain-torch reference.

Light on purpose: nothing here imports Typer, Rich or kvcore, so ``python -m kernels.bench`` runs on
a machine that has only torch and Triton. The Triton module is imported on first use, so a caller
can set ``TRITON_INTERPRET=1`` after ``import kernels`` and before calling ``paged_decode``.
"""

from __future__ import annotations

__all__ = ["STRATEGIES", "LaunchConfig", "SplitStrategy", "choose_num_splits", "paged_decode",
           "paged_decode_reference"]


def __getattr__(name: str):
    if name == "paged_decode_reference":
        from .reference import paged_decode_reference
        return paged_decode_reference
    if name in ("paged_decode", "choose_num_splits", "LaunchConfig"):
        from . import triton_decode
        return getattr(triton_decode, name)
    if name in ("SplitStrategy", "STRATEGIES"):
        from . import splits
        return getattr(splits, name)
    raise AttributeError(f"module 'kernels' has no attribute {name!r}")
