"""The geometry fields of the models whose weights kvcli counts with a ledger of their own
(`kvcore.models.weights` dispatches to it), added once the config is read: Step3's MFA query,
MoE layers, shared expert and RoPE positions (`kvcore.models.step3`), Step-3.5's MoE layers,
shared expert, query heads a layer and output gate (`kvcore.models.step3p5`). A quantised
checkpoint of either is not sized (refused by name). (LongCat-Flash's, whose ledger is its own
too, are read in `kvcore.models.hf_config`.)"""

from __future__ import annotations

from dataclasses import replace

from kvcore.models.geometry import ModelGeometry
from kvcore.models.step3 import STEP3_TEXT, step3_fields
from kvcore.models.step3p5 import STEP3P5, step3p5_fields


def own_ledger_fields(g: ModelGeometry, c: dict, get_dim, source: str) -> ModelGeometry:
    """`g` with its family's fields (`g` itself for the other models)."""
    quantised = bool(g.quantization)
    if g.model_type == STEP3_TEXT:
        return replace(g, **step3_fields(c, get_dim, g.num_layers, quantised, source))
    if g.model_type == STEP3P5:
        return replace(g, **step3p5_fields(c, get_dim, g.layer_kinds, g.num_attention_heads,
                                           quantised, source))
    return g
