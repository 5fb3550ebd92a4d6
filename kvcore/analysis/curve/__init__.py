"""`kvcli curve`: hit rate against cache capacity, every capacity at once, policies compared.

    from kvcore.analysis.curve import CurveOptions, compute_curve
    result = compute_curve("conversation_trace.jsonl", CurveOptions(rule="trace", warmup=0.5))
    result.ceiling, result.points, result.knees

How each point is computed (its ``method``):

* ``one-pass``: LRU from Mattson's stack algorithm (`onepass.py`), at every capacity where
  it is exact: all of them under ``--rule trace``; under ``--rule vllm`` from the largest
  request's block count up to where a block-aligned prompt would cache a duplicate block.
* ``replay``: LRU under ``--rule vllm`` outside that range: the real cache-mode replay
  (KVCacheManager) at ``num_blocks = capacity + 1``.
* ``simulation``: every other policy (`sim.py`), exact at that capacity.

Capacities are usable blocks (the null block not counted). Hit rates are token-weighted over
the requests past the warm-up that ran (rejected requests are left out and counted).

The modules: `compute.py` (the driver), `options.py` (the options, their checks and the
capacities asked for), `reading.py` (a trace file to that input, its block
size and warnings), `input.py` (a trace reduced to block keys),
`option_numbers.py` (an option's comma list), `fastread.py` (plain Mooncake files straight to
arrays), `onepass.py`, `sim.py` and `exact.py` (the per-capacity points, in parallel processes),
`knees.py` (the smallest capacity reaching each fraction of the ceiling); the policies are
`kvcore.analysis.policies`.
"""

from kvcore.analysis.curve.compute import CurvePoint, CurveResult, compute_curve
from kvcore.analysis.curve.option_numbers import parse_numbers
from kvcore.analysis.curve.options import CurveOptions

__all__ = ["CurveOptions", "CurvePoint", "CurveResult", "compute_curve", "parse_numbers"]
