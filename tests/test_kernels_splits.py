"""Split decode under TRITON_INTERPRET=1 (CPU): every split count and both merges (the fused
last-program merge and the separate kernel) against float64, the count rules' numbers on an
H200's 132 SMs, and the fused merge's ticket counters (left at zero for the next launch)."""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"  # before kernels.triton_decode is imported

import pytest
import torch

from kernels import paged_decode, paged_decode_reference
from kernels.checks import Spec, check, make_inputs
from kernels.splits import (
    STRATEGIES,
    SplitStrategy,
    choose_num_splits,
    choose_num_splits_waves,
    even_pieces,
    pick_num_splits,
)

SEED = int.from_bytes(os.urandom(3), "little")
H200 = 132


# fp32 (ieee dots): the tolerance is 1e-5, so a merge that drops or double-counts a piece, or
# weighs one wrongly, fails. Lengths: empty, shorter than a tile, ragged; 9 > the 4 tiles of 200.
@pytest.mark.parametrize("merge", ["fused", "kernel"])
@pytest.mark.parametrize("splits", [1, 2, 3, 4, 9])
def test_every_split_count_matches_float64(splits: int, merge: str) -> None:
    spec = Spec(8, 2, 32, "fp32", 16, (0, 1, 63, 65, 200), None, splits, merge=merge)
    r = check(spec, "cpu", seed=SEED)
    assert r.ok, f"seed {SEED}: {r}"


@pytest.mark.parametrize("merge", ["fused", "kernel"])
def test_split_window_bf16_matches_float64(merge: str) -> None:
    spec = Spec(8, 2, 64, "bf16", 16, (0, 5, 150, 260), 90, 3, merge=merge)
    r = check(spec, "cpu", seed=SEED)
    assert r.ok, f"seed {SEED}: {r}"


def test_fused_merge_leaves_its_counters_at_zero_and_repeats_exactly() -> None:
    from kernels.merge import counters

    spec = Spec(8, 2, 32, "fp32", 16, (0, 90, 200), None, 4)
    x = make_inputs(spec, seed=SEED)
    cnt = counters(1, torch.device("cpu"))
    first = paged_decode(*x, num_splits=4)
    assert int(cnt.abs().sum()) == 0            # every group's merging program reset its ticket
    second = paged_decode(*x, num_splits=4)
    assert torch.equal(first, second)
    separate = paged_decode(*x, num_splits=4, strategy=STRATEGIES["old"])
    torch.testing.assert_close(first, separate, atol=2e-6, rtol=1e-5)


# (the early merge reads pieces no program wrote yet: memory that may hold NaN bit patterns, on
# which the interpreter's numpy warns; seen once in a full compiled pass. The answer is wrong
# either way, which is what the test asserts.)
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_fused_merge_waits_for_the_last_ticket() -> None:
    """A counter that does not start at zero makes an early program merge before the other
    pieces exist: the answer changes. So the ticket, not the program order, picks the merger."""
    from kernels.merge import counters

    spec = Spec(4, 1, 32, "fp32", 16, (200,), None, 4)
    x, y = make_inputs(spec, seed=SEED), make_inputs(spec, seed=SEED + 1)
    paged_decode(*x, num_splits=4)               # whatever memory the pieces reuse holds x's
    cnt = counters(1, torch.device("cpu"))
    cnt[0] = 2                                   # pieces 0 and 1 pass; piece 1 merges too early
    early = paged_decode(*y, num_splits=4)
    cnt.zero_()
    right = paged_decode(*y, num_splits=4)
    assert not torch.allclose(early, right, atol=1e-3)


def test_the_chosen_split_count_path_matches_float64(monkeypatch: pytest.MonkeyPatch) -> None:
    """With an H200's SM count, both rules split this small batch, and the result is exact."""
    import kernels.triton_decode as td

    monkeypatch.setattr(td, "num_sms", lambda device: H200)
    spec = Spec(8, 2, 32, "fp32", 16, (1000, 7), None, None)
    x = make_inputs(spec, seed=SEED)
    exact = paged_decode_reference(x.q.double(), *x[1:], compute_dtype=torch.float64)
    for name, strategy in STRATEGIES.items():
        assert pick_num_splits(strategy, 2, 2, 1000, H200, 64) == 4, name
        out = paged_decode(*x, strategy=strategy).double()
        torch.testing.assert_close(out, exact, atol=1e-5, rtol=1e-5, msg=f"{name} seed {SEED}")


def test_waves_rule_on_an_h200() -> None:
    assert choose_num_splits_waves(64, 8, 4096, H200) == 1     # 512 programs: half the slots
    assert choose_num_splits_waves(256, 8, 1024, H200) == 1
    assert choose_num_splits_waves(33, 8, 4096, H200) == 1     # 264 = half of 528 slots
    assert choose_num_splits_waves(32, 8, 4096, H200) == 2     # 512 programs in one wave
    assert choose_num_splits_waves(8, 8, 8192, H200) == 8      # 512, not legacy's 576
    assert choose_num_splits_waves(1, 8, 32768, H200) == 64    # 66 fit; 64 cut 512 tiles evenly
    assert choose_num_splits_waves(1, 8, 1000, H200) == 4      # pieces keep >= 4 tiles of 64
    assert choose_num_splits_waves(1, 8, 300, H200) == 1
    assert choose_num_splits_waves(1, 8, 32768, None) == 1     # unknown GPU (CPU): single pass
    assert choose_num_splits_waves(0, 8, 0, H200) == 1
    assert choose_num_splits(8, 8, 8192, H200) == 9            # the legacy rule, unchanged


def test_even_pieces_leave_no_piece_empty() -> None:
    assert even_pieces(512, 66) == 64      # 8 tiles each: 66 would leave two pieces empty
    assert even_pieces(10, 4) == 4         # 3 + 3 + 3 + 1
    assert even_pieces(5, 3) == 3
    assert even_pieces(5, 1) == even_pieces(0, 8) == 1
    for tiles in range(1, 60):
        for p in range(1, 20):
            n = even_pieces(tiles, p)
            per = -(-tiles // n)
            assert n <= p and (n - 1) * per < tiles and per == -(-tiles // p)


def test_unknown_strategy_names_are_refused() -> None:
    x = make_inputs(Spec(4, 2, 32, "fp32", 16, (3,), None, 1), seed=SEED)
    with pytest.raises(ValueError, match="unknown merge 'nope'"):
        paged_decode(*x, strategy=SplitStrategy(merge="nope"))
    with pytest.raises(ValueError, match="unknown split rule 'nope'"):
        pick_num_splits(SplitStrategy(rule="nope"), 1, 1, 1, H200, 64)
