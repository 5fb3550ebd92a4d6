"""Count the bytes a kernel loads and stores, per tensor, under Triton's interpreter.

The interpreter performs every ``tl.load``/``tl.store`` as a masked gather/scatter over host
addresses; wrapping those two builder methods gives the exact bytes a program asks for (masked-in
lanes only), attributed to the tensor whose storage holds the address. On a GPU the same
requests become the DRAM traffic when no cache helps, which is why "KV bytes loaded == ideal"
is the property that matters: a kernel that read a KV block once per *query* head would load
``group`` times more. Requires ``TRITON_INTERPRET=1``.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator

import numpy as np
import torch


def _span(t: torch.Tensor) -> tuple[int, int]:
    s = t.untyped_storage()
    return s.data_ptr(), s.data_ptr() + s.nbytes()


class ByteCount:
    """Bytes loaded and stored per named tensor (``other`` for addresses in none of them);
    for the tensors named in ``keep``, every loaded byte's address too (`loaded_at`)."""

    def __init__(self, tensors: dict[str, torch.Tensor], keep: tuple[str, ...] = ()) -> None:
        self.spans = {name: _span(t) for name, t in tensors.items()}
        self.loaded: Counter[str] = Counter()
        self.stored: Counter[str] = Counter()
        self._kept: dict[str, list[np.ndarray]] = {name: [] for name in keep}

    def loaded_at(self, name: str) -> np.ndarray:
        """Addresses of the bytes loaded from ``name`` (one per byte, in load order)."""
        parts = self._kept[name]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)

    def _add(self, counter: Counter, ptrs: np.ndarray, mask: np.ndarray, nbytes: int) -> None:
        ptrs = np.broadcast_to(ptrs, np.broadcast_shapes(ptrs.shape, mask.shape))
        live = ptrs[np.broadcast_to(mask, ptrs.shape)].astype(np.uint64)
        left = np.ones(live.shape, dtype=bool)
        for name, (lo, hi) in self.spans.items():
            inside = left & (live >= lo) & (live < hi)
            counter[name] += int(inside.sum()) * nbytes
            if counter is self.loaded and name in self._kept:
                start = live[inside]
                self._kept[name].append((start[:, None] + np.arange(nbytes, dtype=np.uint64))
                                        .reshape(-1))
            left &= ~inside
        if left.any():
            counter["other"] += int(left.sum()) * nbytes


@contextlib.contextmanager
def count_bytes(tensors: dict[str, torch.Tensor], keep: tuple[str, ...] = ()
                ) -> Iterator[ByteCount]:
    """Within the block, every interpreted load/store is counted into the yielded `ByteCount`
    (which keeps the loaded addresses of the tensors named in ``keep``)."""
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    orig_load, orig_store = builder.create_masked_load, builder.create_masked_store
    count = ByteCount(tensors, keep)

    def load(self, ptrs, mask, other, *args, **kwargs):
        nbytes = ptrs.get_element_ty().primitive_bitwidth // 8
        count._add(count.loaded, ptrs.data, mask.data, nbytes)
        return orig_load(self, ptrs, mask, other, *args, **kwargs)

    def store(self, ptrs, value, mask, *args, **kwargs):
        nbytes = ptrs.get_element_ty().primitive_bitwidth // 8
        count._add(count.stored, ptrs.data, mask.data, nbytes)
        return orig_store(self, ptrs, value, mask, *args, **kwargs)

    builder.create_masked_load, builder.create_masked_store = load, store
    try:
        yield count
    finally:
        builder.create_masked_load, builder.create_masked_store = orig_load, orig_store
