"""A kernel group's work as a linear form in a step's aggregates (`kvcore.clock.work`).

The clock prices a step many thousand times a replay: each group's FLOPs and bytes are
``const + coef . aggregates``, the coefficients precomputed per model, so a step costs one pass
over its requests (`work.aggregate`) and a few multiply-adds a group (`dot`).
"""

from __future__ import annotations

from dataclasses import dataclass

# The step's aggregates every group's work is linear in (`work.aggregate`), in this order:
# tokens, requests, causal (query, key) pairs in full / sliding / chunked layers, KV tokens read
# per full / sliding / chunked layer, the MoE experts the step's tokens reach, and for MLA
# models the contexts of one-token requests (vLLM's MLA decode path reads them as latents) and
# the cached prefixes of longer ones (its prefill path up-projects them); the (query, key) pairs
# of the requests on that decode path, and the logit rows (one a request; a verification of
# speculative drafts samples each of its tokens).
AGGREGATES = ("tokens", "requests", "full_pairs", "win_pairs", "chunk_pairs", "full_ctx",
              "win_ctx", "chunk_ctx", "active_experts", "latent_ctx", "prefix_ctx",
              "latent_pairs", "logit_rows")


@dataclass(frozen=True, slots=True)
class Group:
    """One kernel group's work as ``const + coef . aggregates`` (FLOPs and bytes, integers)."""
    name: str
    kind: str
    layers: int
    flops: tuple[int, ...]      # per aggregate
    bytes0: int                 # weights: read once per step
    bytes: tuple[int, ...]


def vec(**kw: int) -> tuple[int, ...]:
    """Coefficients by aggregate name (the rest 0)."""
    unknown = set(kw) - set(AGGREGATES)
    if unknown:
        raise ValueError(f"unknown aggregates {sorted(unknown)}")
    return tuple(kw.get(name, 0) for name in AGGREGATES)


def dot(coef: tuple[int, ...], x: tuple[int, ...]) -> int:
    total = 0
    for c, v in zip(coef, x):
        if c:
            total += c * v
    return total
