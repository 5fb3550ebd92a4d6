"""How many pieces to cut each sequence's keys into, and how the pieces are merged.

A decode step launches one stage-1 program per (sequence, KV head[, piece]). When the batch is
small (one long sequence, a few 8k ones) those programs leave most of the GPU idle, so each
sequence's keys are cut into ``num_splits`` tile-aligned pieces whose normalised partial outputs
and log-sum-exps are merged afterwards. Two things are chosen here, and both choices are kept
selectable so that a GPU run can time one against the other (``kernels.bench`` prints both):

* the rule for the count: ``legacy`` (the first rule: aim for ~4 programs per SM once there are
  fewer than 2 per SM) or ``waves`` (fill the GPU's resident slots in exactly one wave: a second,
  partial wave of pieces runs at a fraction of the bandwidth while it is the only work left);
* the merge: ``kernel`` (a second kernel over all pieces) or ``fused`` (the program that finishes
  a (sequence, KV head) last merges it, found with an atomic ticket: no second launch).

Neither choice has been timed on a GPU yet: ``STRATEGIES["new"]`` is what the arguments in this
file favour, ``STRATEGIES["old"]`` is what was measured (kernels/README.md).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

RULES = ("legacy", "waves")
MERGES = ("kernel", "fused")
# Resident stage-1 programs per SM for the default launch (4 warps, TILE_N 64, d 128), from the
# sm_90 compile (kernels.aot, Triton 3.9): bf16 94 registers x 128 threads and 39 KB of shared
# memory each let 4 share an SM (64K registers); an fp8 cache's 135-137 registers (the fp8 ->
# bf16 conversion) let 3. tests/test_kernels_aot.py keeps these true.
PROGRAMS_PER_SM = 4
PROGRAMS_PER_SM_FP8 = 3


class SplitStrategy(NamedTuple):
    """Which count rule (``RULES``) and which merge (``MERGES``) a split decode uses."""

    rule: str = "waves"
    merge: str = "fused"


STRATEGIES = {"new": SplitStrategy("waves", "fused"), "old": SplitStrategy("legacy", "kernel")}
DEFAULT_STRATEGY = STRATEGIES["new"]


def num_sms(device: torch.device) -> int | None:
    """Streaming multiprocessors of a CUDA device; None elsewhere (no split is chosen then)."""
    if device.type != "cuda":
        return None
    return torch.cuda.get_device_properties(device).multi_processor_count


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def even_pieces(num_tiles: int, num_splits: int) -> int:
    """The count that cuts ``num_tiles`` tiles into the same pieces as ``num_splits`` does but
    leaves no piece empty (the kernel gives each piece ``cdiv(tiles, splits)`` tiles)."""
    if num_tiles <= 0 or num_splits <= 1:
        return 1
    return _cdiv(num_tiles, _cdiv(num_tiles, num_splits))


def choose_num_splits(num_seqs: int, num_kv_heads: int, max_seq_len: int, sms: int | None, *,
                      tile_n: int = 64, min_tiles_per_split: int = 4,
                      max_splits: int = 64) -> int:
    """The ``legacy`` rule (the one measured on the H200).

    No split when the (sequence, KV head) programs already give every SM two (a full wave at
    two or more resident programs per SM) or when the GPU is unknown (CPU, interpreter).
    Otherwise aim for about four programs per SM, keeping each piece at least
    ``min_tiles_per_split`` tiles long so the merge stays a small share of the traffic.
    """
    programs = num_seqs * num_kv_heads
    if not sms or programs == 0 or programs >= 2 * sms:
        return 1
    want = _cdiv(4 * sms, programs)
    longest = _cdiv(_cdiv(max_seq_len, tile_n), min_tiles_per_split)
    return max(1, min(want, longest, max_splits))


def choose_num_splits_waves(num_seqs: int, num_kv_heads: int, max_seq_len: int,
                            sms: int | None, *, tile_n: int = 64,
                            programs_per_sm: int = PROGRAMS_PER_SM,
                            min_tiles_per_split: int = 4, max_splits: int = 128) -> int:
    """The ``waves`` rule: as many pieces as fit the resident slots in one wave, none empty.

    No split when the GPU is unknown or when the programs already hold half the slots (every
    SM runs two or more: the large batches reached the copy bandwidth that way). Otherwise
    ``floor(slots / programs)`` pieces, at most ``max_splits``, each at least
    ``min_tiles_per_split`` tiles of the longest sequence, then evened out (`even_pieces`) so
    no program of the longest sequence idles. On an H200 (132 SMs, 528 slots): 8 x 8k gets 8
    pieces (512 programs, one wave) where ``legacy`` gave 9 (576: a tail wave of 48); 1 x 32k
    gets 64.
    """
    programs = num_seqs * num_kv_heads
    slots = (sms or 0) * programs_per_sm
    if not slots or programs == 0 or 2 * programs >= slots:
        return 1
    tiles = _cdiv(max_seq_len, tile_n)
    want = min(slots // programs, max_splits, max(1, tiles // min_tiles_per_split))
    return even_pieces(tiles, want)


def pick_num_splits(strategy: SplitStrategy, num_seqs: int, num_kv_heads: int,
                    max_seq_len: int, sms: int | None, tile_n: int, *,
                    fp8: bool = False) -> int:
    """The count ``strategy.rule`` gives this batch (``fp8``: the cache is fp8, whose programs
    are fewer per SM)."""
    if strategy.rule == "legacy":
        return choose_num_splits(num_seqs, num_kv_heads, max_seq_len, sms, tile_n=tile_n)
    if strategy.rule == "waves":
        per_sm = PROGRAMS_PER_SM_FP8 if fp8 else PROGRAMS_PER_SM
        return choose_num_splits_waves(num_seqs, num_kv_heads, max_seq_len, sms, tile_n=tile_n,
                                       programs_per_sm=per_sm)
    raise ValueError(f"unknown split rule {strategy.rule!r} (known: {', '.join(RULES)})")
