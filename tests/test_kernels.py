"""The Triton decode kernel under TRITON_INTERPRET=1 (CPU), against the torch reference and float64.

Inputs are fresh random draws every session (the seed is in every failure message). The block
tables are scattered and their unused entries point at live random blocks, so a kernel that reads
past a sequence's end, or the wrong block, gives a wrong answer.
"""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"  # before kernels.triton_decode is imported

import pytest
import torch

from kernels import paged_decode, paged_decode_reference
from kernels.checks import Spec, check, make_inputs
from kernels.triton_decode import choose_num_splits

SEED = int.from_bytes(os.urandom(3), "little")


def _edges(bs: int) -> tuple[int, ...]:
    return (0, 1, bs - 1, bs, bs + 1, 2 * bs, 3 * bs + 5, 130)


LAYOUTS = {"mha": (4, 4), "gqa4": (8, 2), "mqa": (8, 1), "gqa3": (6, 2)}
MATRIX = []
for i, (dtype, (lname, (hq, hkv))) in enumerate(
        [(d, lay) for d in ("fp32", "fp16", "bf16") for lay in LAYOUTS.items()]):
    bs = (16, 32)[i % 2]
    d = (32, 64)[(i // 2) % 2]
    MATRIX.append(pytest.param(Spec(hq, hkv, d, dtype, bs, _edges(bs), None, (1, 3)[i % 3 == 0]),
                               id=f"{dtype}-{lname}-bs{bs}-d{d}"))
EXTRA = [
    pytest.param(Spec(8, 2, 64, "bf16", 16, (0, 1, 17, 90), 1, 1), id="window1"),
    pytest.param(Spec(8, 2, 64, "bf16", 16, (0, 1, 17, 90, 200), 16, 3), id="window16-split"),
    pytest.param(Spec(8, 2, 64, "fp16", 32, (0, 1, 17, 90, 200), 50, 1), id="window50-bs32"),
    pytest.param(Spec(8, 2, 64, "fp32", 16, (5, 70), 1000, 2), id="window-longer-than-seq"),
    pytest.param(Spec(8, 2, 64, "bf16", 16, (1500,), None, 1), id="long"),
    pytest.param(Spec(8, 2, 64, "bf16", 16, (1500, 3), None, 6), id="long-split"),
    pytest.param(Spec(8, 2, 64, "fp16", 16, (40, 3), None, 9), id="more-splits-than-tiles"),
    pytest.param(Spec(32, 8, 128, "bf16", 16, (0, 33, 100), None, 1), id="llama-heads"),
    pytest.param(Spec(8, 2, 80, "bf16", 16, (77, 3), None, 2), id="head-dim-80"),
    pytest.param(Spec(8, 2, 64, "fp16", 16, (77, 3), None, 1, strided=False), id="contiguous-kv"),
]


@pytest.mark.parametrize("spec", MATRIX + EXTRA)
def test_kernel_matches_reference_and_float64(spec: Spec) -> None:
    r = check(spec, "cpu", seed=SEED)
    assert r.ok, f"seed {SEED}: {r}"


def test_zero_length_gives_exact_zeros_and_split_agrees_with_single_pass() -> None:
    spec = Spec(8, 2, 32, "fp32", 16, (0, 50, 0, 129), None, 1)
    x = make_inputs(spec, seed=SEED)
    one = paged_decode(*x, num_splits=1)
    four = paged_decode(*x, num_splits=4)
    assert torch.equal(one[0], torch.zeros_like(one[0]))
    assert torch.equal(four[2], torch.zeros_like(four[2]))
    assert one[1].abs().sum() > 0
    torch.testing.assert_close(one, four, atol=2e-6, rtol=1e-5)


def test_reference_agrees_with_sdpa_on_contiguous_kv() -> None:
    """The reference itself, against an independent formulation (dense SDPA, float64)."""
    spec = Spec(8, 2, 32, "fp32", 16, (37, 64), 20, 1)
    x = make_inputs(spec, seed=SEED)
    ref = paged_decode_reference(*x, sliding_window=20, compute_dtype=torch.float64)
    for s, n in enumerate(spec.seq_lens):
        pos = torch.arange(max(0, n - 20), n)
        blocks = x.block_tables[s].long()[pos // 16]
        k = x.k_cache[blocks, pos % 16].double().transpose(0, 1)   # [Hkv, n, D]
        v = x.v_cache[blocks, pos % 16].double().transpose(0, 1)
        q = x.q[s].double().view(2, 4, 32)                         # group as query rows
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v).reshape(8, 32)
        torch.testing.assert_close(ref[s].double(), o, atol=1e-5, rtol=1e-5)


def test_output_dtype_and_shape_follow_q() -> None:
    spec = Spec(4, 2, 32, "bf16", 16, (3, 20), None, 1)
    x = make_inputs(spec, seed=SEED)
    out = paged_decode(*x)
    assert out.dtype == torch.bfloat16 and out.shape == x.q.shape


def test_bad_head_counts_are_refused() -> None:
    x = make_inputs(Spec(6, 4, 32, "fp32", 16, (3,), None, 1), seed=SEED)
    with pytest.raises(ValueError, match="do not split"):
        paged_decode(*x)


@pytest.mark.parametrize("splits,window", [(1, None), (3, None), (2, 24)])
def test_kv_bytes_loaded_equal_the_ideal(splits: int, window: int | None) -> None:
    from kernels.bytecount import count_bytes

    spec = Spec(8, 2, 64, "bf16", 16, (0, 1, 15, 16, 17, 64, 100), window, splits)
    x = make_inputs(spec, seed=SEED)
    with count_bytes({"kv": x.k_cache, "q": x.q, "tables": x.block_tables,
                      "lens": x.seq_lens}) as c:
        paged_decode(*x, num_splits=splits, sliding_window=window)
    keys = sum(min(n, window) if window else n for n in spec.seq_lens)
    ideal_kv = keys * spec.num_kv_heads * spec.head_dim * 2 * 2   # K and V, 2 bytes each
    assert c.loaded["kv"] == ideal_kv
    assert c.loaded["q"] == x.q.numel() * 2 * splits                # q once per program
    assert c.loaded["tables"] == keys * spec.num_kv_heads * 4     # one int32 per key
    assert c.stored["kv"] == 0 and c.stored["q"] == 0


def test_byte_count_catches_a_kernel_that_reads_kv_per_query_head() -> None:
    """The same attention computed as MHA over a cache whose KV heads were repeated per query
    head (what a per-query-head kernel reads) loads `group` times the ideal: the counter sees it."""
    from kernels.bytecount import count_bytes

    spec = Spec(8, 2, 64, "bf16", 16, (40, 70), None, 1)
    x = make_inputs(spec, seed=SEED)
    k_rep = x.k_cache.repeat_interleave(4, dim=2)
    v_rep = x.v_cache.repeat_interleave(4, dim=2)
    with count_bytes({"k": k_rep, "v": v_rep}) as c:
        out = paged_decode(x.q, k_rep, v_rep, x.block_tables, x.seq_lens, num_splits=1)
    ideal_kv = 110 * 2 * 64 * 2 * 2
    assert c.loaded["k"] + c.loaded["v"] == 4 * ideal_kv
    torch.testing.assert_close(out.float(), paged_decode(*x).float(), atol=1.6e-2, rtol=0)


def test_choose_num_splits() -> None:
    h200 = 132
    assert choose_num_splits(64, 8, 4096, h200) == 1      # 512 programs fill the GPU
    assert choose_num_splits(256, 8, 1024, h200) == 1
    assert choose_num_splits(1, 8, 32768, h200) == 64     # capped at max_splits
    assert choose_num_splits(8, 8, 8192, h200) == 9       # ceil(528 / 64)
    assert choose_num_splits(1, 8, 300, h200) == 2        # pieces keep >= 4 tiles of 64
    assert choose_num_splits(1, 8, 32768, None) == 1      # unknown GPU (CPU): single pass
    assert choose_num_splits(0, 8, 0, h200) == 1


def test_fresh_inputs_are_not_degenerate() -> None:
    """What the other tests lean on (the module docstring): finite random K, V and q, no block
    left constant, each sequence's blocks distinct (scattered, not 0, 1, 2, ...) and the unused
    tail of a table row pointing at live blocks. A fixed seed: this checks `make_inputs`, not a
    kernel, so one reproducible draw says it all."""
    x = make_inputs(Spec(8, 2, 32, "bf16", 16, (30, 70), None, 1), seed=1234)
    num_blocks = x.k_cache.shape[0]                 # 2 + 5 needed, 3 spare
    assert num_blocks == 10
    for t in (x.k_cache, x.v_cache, x.q):
        assert bool(torch.isfinite(t.float()).all()) and t.float().std() > 0.5
    assert not torch.equal(x.k_cache, x.v_cache)
    blocks = torch.cat([x.k_cache, x.v_cache]).float().flatten(1)
    assert bool((blocks.std(dim=1) > 0.5).all())   # no block is zeros (or a constant)
    tables = x.block_tables.long()
    assert tables.shape == (2, 5) and bool(((tables >= 0) & (tables < num_blocks)).all())
    used = torch.cat([tables[0, :2], tables[1, :5]])
    assert len(set(used.tolist())) == 7             # the sequences' blocks are distinct
    assert used.tolist() != list(range(7))          # and scattered
