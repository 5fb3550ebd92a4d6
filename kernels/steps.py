"""One layer's decode over an engine step's real block tables, timed: `time_step`.

For `kvcli bench --gpu --trace` (`kvcli.gpu_steps`), which captures the steps from a replay.
torch + Triton only: a step arrives as plain lists (block ids in a pool of ``num_blocks``, exact
lengths). The pool is allocated once for all steps (`make_pool`: a few random copies of one
layer's cache, so that consecutive timed launches find nothing in L2) and each step's kernel
reads the blocks its tables name, where the replay put them.
"""

from __future__ import annotations

from typing import Any

import torch

from .cases import distinct_blocks, ideal_bytes, keys_read, random_kv
from .timing import ROTATE_BYTES, copies_for, l2_bytes, time_launches


def make_pool(num_blocks: int, block_size: int, num_kv_heads: int, head_dim: int,
              kv_dtype: torch.dtype, device: torch.device, *, scale: float = 1.0,
              least_read: int = 0, memory_share: float = 0.25) -> list[torch.Tensor]:
    """Copies of one layer's paged cache ``[num_blocks, 2, page, Hkv, D]`` with random values
    (stored as value / ``scale``): on a GPU as many as the step reading the fewest bytes
    (``least_read``) needs to cycle past L2 (`timing.copies_for`: a sliding window of 128 reads
    a few MB; 8 copies cycled 9-42 MB for gpt-oss-20b's window, all in L2), within
    ``memory_share`` of the free memory (at least one); one on CPU. `time_step` rotates over
    as many as its step needs."""
    shape = (num_blocks, 2, block_size, num_kv_heads, head_dim)
    nbytes = num_blocks * 2 * block_size * num_kv_heads * head_dim * kv_dtype.itemsize
    copies = copies_for(least_read or nbytes, device, each=nbytes, memory_share=memory_share)
    return [random_kv(shape, kv_dtype, device, scale) for _ in range(copies)]


def time_step(pool: list[torch.Tensor], rows: list[list[int]], lens: list[int], *,
              num_q_heads: int, q_dtype: torch.dtype, window: int | None = None,
              scales: tuple[float, float] = (1.0, 1.0), strategy: Any = None,
              config: Any = None) -> dict[str, Any]:
    """Time the kernel over one step's tables (``rows[i]``: request i's block ids, ``lens[i]``
    its length); the record: ``num_splits``, ``tokens_read``, ``bytes`` (ideal), ``time_us``,
    ``gbps``, ``copies``, ``cycled_bytes`` (the distinct KV bytes the copies rotate over: a
    block several requests share counts once), ``warm_l2`` (under twice the L2: the time may
    be L2's), ``timing``."""
    from .splits import DEFAULT_STRATEGY, num_sms, pick_num_splits
    from .triton_decode import DEFAULT_CONFIG, FP8_DTYPES, paged_decode

    strategy = strategy or DEFAULT_STRATEGY
    config = config or DEFAULT_CONFIG
    device = pool[0].device
    _, _, block_size, num_kv_heads, head_dim = pool[0].shape
    fp8 = pool[0].dtype in FP8_DTYPES
    width = max(1, max(len(r) for r in rows))
    tables = torch.zeros(len(rows), width, dtype=torch.int32)
    for i, r in enumerate(rows):
        tables[i, :len(r)] = torch.tensor(r, dtype=torch.int32)
    tables = tables.to(device)
    seq_lens = torch.tensor(lens, dtype=torch.int32, device=device)
    read = keys_read(lens, window)
    nbytes = ideal_bytes(lens, num_q_heads, num_kv_heads, head_dim, q_dtype.itemsize, block_size,
                         kv_elem=pool[0].element_size(), window=window)
    # what the step must bring from memory: its distinct blocks (a shared prefix block is
    # read once from HBM, then from L2), whole, which rounds a window's partial blocks up
    kv_read = distinct_blocks(rows, lens, block_size, window) * block_size * num_kv_heads \
        * head_dim * 2 * pool[0].element_size()
    # the pool's copies were sized within memory already (`make_pool`): as many as this step
    # needs of them (a second memory check, with the pool allocated, allowed ~3/4 of them)
    copies = min(len(pool), -(-ROTATE_BYTES // max(1, kv_read))) if device.type == "cuda" else 1
    q = [torch.randn(len(rows), num_q_heads, head_dim, device=device, dtype=q_dtype)
         for _ in range(copies)]
    out = [torch.empty_like(x) for x in q]
    eff = max(lens) if lens else 0
    if window:
        eff = min(eff, window + config.tile_n)
    splits = pick_num_splits(strategy, len(rows), num_kv_heads, eff, num_sms(device),
                             config.tile_n, fp8=fp8)

    def one(i: int) -> torch.Tensor:
        kv = pool[i]
        return paged_decode(q[i], kv[:, 0], kv[:, 1], tables, seq_lens, sliding_window=window,
                            k_scale=scales[0], v_scale=scales[1], num_splits=splits,
                            strategy=strategy, config=config, out=out[i])

    # (the ignore: mypy cannot type a lambda's default argument against a zero-argument
    # Callable, python/mypy#15459)
    t, how = time_launches([lambda i=i: one(i) for i in range(copies)])  # type: ignore[misc]
    # a kernel whose copies cycle less than twice the L2 may find its data there: said, and
    # left out of the summary's percentages (`kvcli.gpu_steps.summarize`)
    return {"num_splits": splits, "tokens_read": read, "bytes": nbytes, "time_us": t * 1e6,
            "gbps": nbytes / t / 1e9, "copies": copies, "cycled_bytes": copies * kv_read,
            "warm_l2": copies * kv_read < 2 * l2_bytes(device), "timing": how}
