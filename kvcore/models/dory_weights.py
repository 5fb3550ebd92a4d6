"""Dory's weights on its one rank (`kvcore.models.dory` says what each block holds; checked
on the meta device: tests/data/refused_lifted/)."""

from __future__ import annotations

from kvcore.models.rank_params import Ledger


def dory_ledger(kinds: tuple[str, ...], vocab_rows: int, vocab: int, hidden: int,
                heads: int, kv_heads: int, head_dim: int, ffn: int) -> Ledger:
    """The one rank's parameters (vLLM builds Dory on one rank only)."""
    led = Ledger()
    q, kv = heads * head_dim, kv_heads * head_dim
    led.model += 2 * vocab_rows * hidden + vocab     # (embedding, head, its logit_scale)
    for k in kinds:
        if k == "mlp":
            led.layer += 3 * hidden * ffn
            led.model += 2 * ffn + hidden
        else:
            led.layer += hidden * (q + 2 * kv) + 2 * hidden * q
            led.model += 2 * q + hidden
    return led
