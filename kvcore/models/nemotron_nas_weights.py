"""A rank's parameters of a Nemotron-NAS model (`kvcore.models.nemotron_nas`), layer by layer
as vLLM 0.33's nemotron_nas.py builds them: Llama attention (its input norm; QKV and output
biases where ``attention_bias``) where the layer has attention, a gated MLP of the layer's
width (its norm; gate_up's bias split and down's whole where ``mlp_bias``) where it has one.
Checked on the meta device at TP 1, 2, 4, 8 (tests/data/nemotron_nas/).
"""

from __future__ import annotations

from kvcore.models import rank_params as rp
from kvcore.models.geometry import ModelGeometry
from kvcore.models.nemotron_nas import NasBlocks
from kvcore.models.rank_params import Ledger


def nas_ledger(g: ModelGeometry, nas: NasBlocks, tp: int, layers: range | None = None,
               first: bool = True, last: bool = True) -> Ledger:
    """One of ``tp`` ranks' parameters: the decoder `layers` (None: all), the embedding where
    `first`, the LM head (the embedding again where tied) and final norm where `last`."""
    h, hd, led = g.hidden_size, g.head_dim, Ledger()
    vh = rp.vocab_rows(g, tp) * h
    # (a tied head is the embedding, which the last stage builds too: DeciModel)
    led.model += vh * first + (vh + h) * last - vh * (g.tie_word_embeddings and first and last)
    q = g.num_attention_heads // tp * hd
    for i, (kv_heads, width) in enumerate(zip(nas.kv_heads, nas.ffn_widths, strict=True)):
        if layers is not None and i not in layers:
            continue
        if kv_heads:
            kv = rp.on_rank(kv_heads, tp) * hd
            led.layer += h * (q + 2 * kv) + q * h
            led.model += h + ((q + 2 * kv + h) if g.attention_bias else 0)
        if width:
            led.layer += 3 * h * width // tp
            led.model += h + ((2 * width // tp + h) if g.mlp_bias else 0)
    return led
