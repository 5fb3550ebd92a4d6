"""The geometry fields of the models whose weights kvcli counts with a ledger of their own
(`kvcore.models.weights` dispatches to it), added once the config is read: Step3's MFA query,
MoE layers, shared expert and RoPE positions (`kvcore.models.step3`). A quantised checkpoint
is not sized (refused by name). (LongCat-Flash's, whose ledger is its own too, are read in
`kvcore.models.hf_config`.)"""

from __future__ import annotations

from dataclasses import replace

from kvcore.models.geometry import ModelGeometry
from kvcore.models.step3 import STEP3_TEXT, step3_fields


def own_ledger_fields(g: ModelGeometry, c: dict, get_dim, source: str) -> ModelGeometry:
    """`g` with its family's fields (`g` itself for the other models)."""
    quantised = bool(g.quantization)
    if g.model_type == STEP3_TEXT:
        return replace(g, **step3_fields(c, get_dim, g.num_layers, quantised, source))
    return g
