"""The benchmark's cases: block tables (made by kvcore, shipped in ``data/``), the inputs built
over them on a device, their ideal bytes, and the torch baselines (gather + SDPA, SDPA on
contiguous KV). torch only: no Triton, no kvcore.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from .timing import copies_for


class CaseSpec(NamedTuple):
    """A benchmark case: the head layout, q's dtype, the cache's dtype (None: q's; "fp8": e4m3
    with `FP8_SCALES`) and a sliding window; lengths and block tables come from the tables file."""

    name: str
    num_q_heads: int = 32     # Llama-3.1-8B: 32 query heads, 8 KV heads, head dim 128
    num_kv_heads: int = 8
    head_dim: int = 128
    dtype: str = "bf16"
    kv_dtype: str | None = None
    window: int | None = None

    @property
    def label(self) -> str:
        """The case's name with its cache dtype and window: ``1x32k``, ``1x32k-fp8-w4096``."""
        return (self.name + (f"-{self.kv_dtype}" if self.kv_dtype else "")
                + (f"-w{self.window}" if self.window else ""))

    @property
    def scales(self) -> tuple[float, float]:
        from .checks import FP8_SCALES

        return FP8_SCALES if self.kv_dtype else (1.0, 1.0)


DEFAULT_CASES = ["64x4k", "1x32k", "8x8k", "256x1k", "64xvar", "64x4k-prefix"]
# The benchmark's matrix (`matrix`): every default case in bf16 and with an fp8 cache, and these
# with a sliding window (Gemma 3's 1,024 on a large batch; 4,096 on one long sequence).
WINDOW_CASES = [("64x4k", 1024), ("1x32k", 4096), ("8x8k", 1024)]


SMOKE_WINDOW_CASES = [("3xvar", 40)]


def matrix(names: list[str], kv_dtypes: tuple[str | None, ...] = (None, "fp8"),
           windows: list[tuple[str, int]] | None = None,
           base: CaseSpec | None = None) -> list[CaseSpec]:
    """The cases to run: each name in each cache dtype, then the ``windows`` cases (name,
    window; default `WINDOW_CASES`) whose name is among ``names``."""
    base = base or CaseSpec("")
    out = [base._replace(name=n, kv_dtype=kv) for n in names for kv in kv_dtypes]
    out += [base._replace(name=n, kv_dtype=kv, window=w)
            for n, w in (WINDOW_CASES if windows is None else windows)
            if n in names for kv in kv_dtypes]
    return out


def random_tables(seq_lens: list[int], block_size: int, seed: int = 0) -> dict:
    """Fallback when a case is not in the file: distinct blocks in a random order."""
    need = [-(-n // block_size) for n in seq_lens]
    num_blocks = sum(need) + 64
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(num_blocks, generator=g).tolist()
    rows, at = [], 0
    for n in need:
        rows.append(perm[at:at + n])
        at += n
    return {"num_blocks": num_blocks, "seq_lens": seq_lens, "block_tables": rows,
            "source": "random permutation"}


def keys_read(seq_lens: list[int], window: int | None = None) -> int:
    """Keys a decode step attends to: every sequence's, or its last ``window``."""
    return sum(min(n, window) if window else n for n in seq_lens)


def distinct_blocks(rows: list[list[int]], seq_lens: list[int], block_size: int,
                    window: int | None = None) -> int:
    """Distinct blocks a decode step reads: a prefix block that several requests share is
    one block in memory, read from HBM once and from L2 after (a batch of one system prompt
    reads it once however many requests attend to it)."""
    seen: set[int] = set()
    for row, n in zip(rows, seq_lens):
        if n > 0:
            first = (max(0, n - window) if window else 0) // block_size
            seen.update(row[first:(n - 1) // block_size + 1])
    return len(seen)


def ideal_bytes(seq_lens: list[int], num_q_heads: int, num_kv_heads: int, head_dim: int,
                elem: int, block_size: int, *, kv_elem: int | None = None,
                window: int | None = None) -> int:
    """One decode step's ideal traffic: each KV byte it attends to once (``kv_elem`` bytes an
    element, default ``elem``), q read and out written (``elem``), the block-table entries of
    the blocks it reads and the lengths (int32)."""
    kv = keys_read(seq_lens, window) * num_kv_heads * head_dim * 2 * (kv_elem or elem)
    qo = 2 * len(seq_lens) * num_q_heads * head_dim * elem
    blocks = 0
    for n in seq_lens:
        if n > 0:
            start = max(0, n - window) if window else 0
            blocks += (n - 1) // block_size - start // block_size + 1
    return kv + qo + blocks * 4 + 4 * len(seq_lens)


class Built(NamedTuple):
    q: list[torch.Tensor]
    kv: list[torch.Tensor]          # [num_blocks, 2, page, Hkv, D] per copy
    out: list[torch.Tensor]
    block_tables: torch.Tensor
    seq_lens: torch.Tensor
    lens: list[int]


def random_kv(shape: tuple[int, ...], kv_dtype: torch.dtype, device: torch.device,
              scale: float = 1.0) -> torch.Tensor:
    """A random cache: N(0, 1) values, stored as ``value / scale`` (an fp8 cache: in e4m3)."""
    x = torch.randn(shape, device=device, dtype=torch.float32 if kv_dtype.itemsize == 1
                    else kv_dtype)
    # (in place: ``x / scale`` held a second float32 copy, 9 bytes a value at the peak, not 5)
    return x.div_(scale).to(kv_dtype) if kv_dtype.itemsize == 1 else x


def build(spec: CaseSpec, tab: dict, block_size: int, device: torch.device) -> Built:
    from .checks import DTYPES, KV_DTYPES

    dtype = DTYPES[spec.dtype]
    kv_dtype = KV_DTYPES[spec.kv_dtype] if spec.kv_dtype else dtype
    lens = list(tab["seq_lens"])
    kv_bytes = (tab["num_blocks"] * 2 * block_size * spec.num_kv_heads * spec.head_dim
                * kv_dtype.itemsize)
    # sized by what a launch reads (a window reads a fraction of the pool), each copy a pool
    read = keys_read(lens, spec.window) * 2 * spec.num_kv_heads * spec.head_dim * kv_dtype.itemsize
    copies = copies_for(read, device, each=kv_bytes)
    max_blocks = max(1, max(len(r) for r in tab["block_tables"]))
    bt = torch.zeros(len(lens), max_blocks, dtype=torch.int32)
    for s, row in enumerate(tab["block_tables"]):
        bt[s, :len(row)] = torch.tensor(row, dtype=torch.int32)
    shape = (tab["num_blocks"], 2, block_size, spec.num_kv_heads, spec.head_dim)
    # one scale for K and V here: the fp8 checks test distinct ones; this times the reads
    kv = [random_kv(shape, kv_dtype, device, spec.scales[0]) for _ in range(copies)]
    q = [torch.randn(len(lens), spec.num_q_heads, spec.head_dim, device=device, dtype=dtype)
         for _ in range(copies)]
    out = [torch.empty_like(x) for x in q]
    return Built(q, kv, out, bt.to(device), torch.tensor(lens, dtype=torch.int32, device=device),
                 lens)


def gather_kv(b: Built, i: int, block_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """KV gathered through the block table: [S, Hkv, L, D] views of fresh [S, L, Hkv, D] copies
    (the layout SDPA's flash kernel reads natively)."""
    max_len = max(b.lens) if b.lens else 0
    nb = -(-max_len // block_size)
    idx = b.block_tables[:, :nb].long()

    def one(cache: torch.Tensor) -> torch.Tensor:          # [blocks, page, Hkv, D]
        x = cache[idx]                                      # [S, nb, page, Hkv, D]
        return x.reshape(x.shape[0], nb * block_size, *x.shape[-2:])[:, :max_len].transpose(1, 2)

    return one(b.kv[i][:, 0]), one(b.kv[i][:, 1])


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None
         ) -> torch.Tensor:
    """Decode attention with SDPA: the GQA group becomes the query-length axis, so every
    backend applies (no enable_gqa needed) and KV is read once per KV head."""
    s, hq, d = q.shape
    hkv = k.shape[1]
    qg = q.view(s, hkv, hq // hkv, d)
    o = torch.nn.functional.scaled_dot_product_attention(qg, k, v, attn_mask=mask)
    return o.reshape(s, hq, d)


def length_mask(lens: list[int], device: torch.device) -> torch.Tensor | None:
    if len(set(lens)) <= 1:
        return None
    max_len = max(lens)
    pos = torch.arange(max_len, device=device)
    return (pos[None, :] < torch.tensor(lens, device=device)[:, None])[:, None, None, :]


def smoke_tables() -> dict:
    """Small cases for the interpreter smoke run (window case: 3xvar with W 40; 1x600 splits
    on the smoke run's pretend GPU)."""
    cases = {"4x100": random_tables([100] * 4, 16, seed=1),
             "3xvar": random_tables([0, 37, 250], 16, seed=2),
             "1x600": random_tables([600], 16, seed=3)}
    return {"source": "random permutation (smoke)", "block_size": 16, "cases": cases}


def synthetic_lens(name: str) -> tuple[list[int]]:
    """Lengths for a case missing from the tables file, from its name (``8x8k``: 8 x 8192)."""
    seqs, _, ctx = name.partition("x")
    n = {"1k": 1024, "4k": 4096, "8k": 8192, "32k": 32768}.get(ctx.split("-")[0], 4096)
    return ([n] * int(seqs),)

