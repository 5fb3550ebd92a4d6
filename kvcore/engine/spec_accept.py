"""How many drafted tokens the target model accepts: kvcli's model of speculative decoding's
outcome (vLLM's rejection sampler decides it from the text; a replay has no text).

Each draft position is accepted with probability `rate`, independently, until the first
rejection (the acceptance model of Leviathan et al.: with K drafts a step yields on average
(1 - rate^(K+1)) / (1 - rate) tokens, the bonus token included). The draws are a pure function
of (seed, request id, the request's output tokens before this step, the draft's position), so a
replay is repeatable, both builds agree, and the scheduler oracle's harness
(tests/data/sched_spec) asks this same function what its fake model samples.

Standard library only: the oracle's harness imports this file by path, outside kvcore.
"""

from __future__ import annotations

import zlib

_MASK = (1 << 64) - 1


def _mix(x: int) -> float:
    """splitmix64's finalizer: 64 well-mixed bits from `x`, as a float in [0, 1)."""
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    x ^= x >> 31
    return (x >> 11) / float(1 << 53)


def accepted_drafts(seed: int, request_id: str, num_output_tokens: int, num_drafts: int,
                    rate: float) -> int:
    """The number of `num_drafts` drafts accepted (the leading ones) when request
    `request_id`, with `num_output_tokens` output tokens so far, verifies them."""
    if rate >= 1.0:
        return num_drafts
    if rate <= 0.0:
        return 0
    base = (seed * 0x9E3779B97F4A7C15 + zlib.crc32(request_id.encode()) * 0xD6E8FEB86659FD93
            + num_output_tokens * 0xA0761D6478BD642F) & _MASK
    n = 0
    while n < num_drafts and _mix((base + n) & _MASK) < rate:
        n += 1
    return n


def mean_tokens_per_step(num_drafts: int, rate: float) -> float:
    """The tokens a decode step yields on average under this model (the bonus included)."""
    if rate >= 1.0:
        return float(num_drafts + 1)
    return (1.0 - rate ** (num_drafts + 1)) / (1.0 - rate)
