"""Sliding-window decode over the block tables of real hybrid replays (TRITON_INTERPRET=1, CPU).

The tables come from kvcore (`kvcore.engine.decode_capture`): a sliding group's table keeps an
entry for every position, the dropped blocks before the window being the null block 0. The
byte counter keeps every loaded address, so the test sees *which* blocks the kernel read and how
much of each: exactly the window's tokens (the masks load no lane outside [len - W, len), so a
tile that straddles the window's start costs nothing extra), none of the null entries, and the
answer matches the float64 reference over the same tables. Expected bytes are computed here from
the captured lengths, the window and the head layout alone.
"""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"  # before kernels.triton_decode is imported

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from kernels import paged_decode, paged_decode_reference
from kernels.bytecount import count_bytes
from kernels.checks import FP8_SCALES, TOLERANCE
from kernels.fp8 import quantize
from kvcore.engine.decode_capture import capture_decode_steps
from kvcore.engine.options import ReplayOptions

ROOT = Path(__file__).resolve().parents[1]
SEED = int.from_bytes(os.urandom(3), "little")


def _step_inputs(step, group: int, hq: int, hkv: int, d: int, kv_dtype: str | None,
                 max_seqs: int, seed: int):
    """The step's first ``max_seqs`` requests in ``group``: their block ids renumbered densely
    (0 stays the null block; a bijection keeps which block is which) over a random cache whose
    unused table entries point at live blocks."""
    g = torch.Generator().manual_seed(seed)
    rows = step.block_tables[group][:max_seqs]
    lens = step.seq_lens[:max_seqs]
    ids = {0: 0}
    for r in rows:
        for b in r:
            ids.setdefault(b, len(ids))
    num_blocks = len(ids) + 3
    width = max(len(r) for r in rows) + 2
    tables = torch.randint(1, num_blocks, (len(rows), width), generator=g, dtype=torch.int32)
    for i, r in enumerate(rows):
        tables[i, :len(r)] = torch.tensor([ids[b] for b in r], dtype=torch.int32)
    kv = torch.randn(num_blocks, 2, 16, hkv, d, generator=g)
    if kv_dtype:
        kv = torch.stack([quantize(kv[:, i], FP8_SCALES[i]) for i in (0, 1)], dim=1)
    else:
        kv = kv.to(torch.bfloat16)
    q = torch.randn(len(rows), hq, d, generator=g).to(torch.bfloat16)
    return q, kv, tables, torch.tensor(lens, dtype=torch.int32), [
        [ids[b] for b in r] for r in rows]


CASES = {
    # gpt-oss-20b through kvcore's sizing: sliding group (W 128) first, 64 q / 8 KV heads, d 64
    "gpt-oss-20b": (str(ROOT / "traces" / "multiturn-chat.jsonl"),
                    {"model": "gpt-oss-20b"}, 64, 8, 64, 6),
    # a config line's groups: full + two sliding groups of W 48, the oracle's hybrid case
    "config-groups": (str(ROOT / "tests" / "data" / "sched_fresh_hybrid" / "hseed209.trace.jsonl"),
                      {"arrivals": "step"}, 8, 2, 32, 8),
}


@pytest.fixture(scope="module")
def captured() -> dict:
    out = {}
    for name, (trace, opts, *_rest) in CASES.items():
        cap = capture_decode_steps(trace, ReplayOptions(**opts), 3)
        # the captured step whose longest request reaches furthest past the window
        out[name] = cap, max(cap.steps, key=lambda s: (max(s.seq_lens), len(s.seq_lens)))
    return out


@pytest.mark.parametrize("kv_dtype", [None, "fp8"])
@pytest.mark.parametrize("name", list(CASES))
def test_window_decode_reads_only_the_windows_blocks(captured: dict, name: str,
                                                     kv_dtype: str | None) -> None:
    cap, step = captured[name]
    _, _, hq, hkv, d, max_seqs = CASES[name]
    group = next(i for i, g in enumerate(cap.groups) if g.sliding_window)
    window = cap.groups[group].sliding_window
    q, kv, tables, lens, rows = _step_inputs(step, group, hq, hkv, d, kv_dtype, max_seqs, SEED)
    assert max(lens.tolist()) > window + 16                  # the window does drop blocks
    assert any(r[0] == 0 for r in rows)                      # and the table has null entries
    scales = FP8_SCALES if kv_dtype else (1.0, 1.0)
    kw = {"sliding_window": window, "k_scale": scales[0], "v_scale": scales[1]}
    with count_bytes({"kv": kv, "q": q, "tables": tables}, keep=("kv",)) as c:
        out = paged_decode(q, kv[:, 0], kv[:, 1], tables, lens, num_splits=2, **kw)

    elem = kv.element_size()
    per_token = hkv * d * 2 * elem                             # K and V of one token
    # Expected: each sequence's last min(len, W) positions, attributed to their blocks.
    want: Counter[int] = Counter()
    for n, r in zip(lens.tolist(), rows):
        for pos in range(max(0, n - window), n):
            want[r[pos // 16]] += per_token
    assert 0 not in want                                       # no window touches a null entry
    assert c.loaded["kv"] == sum(want.values()) == per_token * sum(
        min(n, window) for n in lens.tolist())
    block_bytes = kv.stride(0) * elem
    addr = c.loaded_at("kv") - np.uint64(kv.data_ptr())
    got = Counter({int(b): int(k) for b, k in zip(*np.unique(addr // block_bytes,
                                                             return_counts=True))})
    assert got == want                                         # block by block, byte for byte

    exact = paged_decode_reference(q.double(), kv[:, 0], kv[:, 1], tables, lens,
                                   compute_dtype=torch.float64, **kw)
    atol, rtol = TOLERANCE["bf16"]
    assert ((out.double() - exact).abs() <= atol + rtol * exact.abs()).all(), f"seed {SEED}"
    # and the window matters: attending to every key gives another answer
    full = paged_decode_reference(q.double(), kv[:, 0], kv[:, 1], tables, lens,
                                  compute_dtype=torch.float64, k_scale=scales[0],
                                  v_scale=scales[1])
    assert (full - exact).abs().max() > 0.05


def test_the_full_group_of_the_same_step_reads_every_block(captured: dict) -> None:
    cap, step = captured["config-groups"]
    full = next(i for i, g in enumerate(cap.groups) if not g.sliding_window)
    q, kv, tables, lens, rows = _step_inputs(step, full, 8, 2, 32, None, 8, SEED)
    with count_bytes({"kv": kv}) as c:
        paged_decode(q, kv[:, 0], kv[:, 1], tables, lens, num_splits=1)
    assert all(0 not in r for r in rows)
    assert c.loaded["kv"] == sum(lens.tolist()) * 2 * 32 * 2 * 2
