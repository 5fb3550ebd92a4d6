"""Step-3.5's MTP module as vLLM 0.33 builds it (step3p5_mtp.py, class Step3p5MTP; config/
speculative.py rewrites a step3p5 target's model_type to step3p5_mtp): per module a
`Step3p5DecoderLayer` numbered ``num_hidden_layers + i`` (its kind from the config class's
``mtp_layer_types``, MoE from ``mtp_mlp_layer_types`` or ``moe_layers_enum``, the sliding
layers' query heads), ``eh_proj`` a plain 2h -> h linear on every worker, ``enorm`` and
``hnorm``, and a ``shared_head`` of its own: a norm and an LM head split over the workers
(``has_own_lm_head``: vLLM keeps it, not the target's). Only the embedding is the target's.
Each module's sliding-window cache joins one of the target's sliding groups (tests/data/
weights_census/drafts2/; several modules, built at K 1 only: mtpmulti/).
"""

from __future__ import annotations

from dataclasses import replace

from kvcore.errors import InputError
from kvcore.models.eagle_draft import DraftModel
from kvcore.models.geometry import ModelGeometry
from kvcore.models.rank_params import VOCAB_PAD


def step3p5_mtp(target: ModelGeometry, name: str, n: int = 1) -> DraftModel:
    """The `n`-module draft of Step-3.5 `target` (n > 1: at K 1 only, `mtp_draft`)."""
    if len(target.mtp_layer_kinds) < n:
        raise InputError(f"mtp with {target.name}: its config names no MTP layer kinds "
                         "(mtp_layer_types, or layer_types padded with the MTP layers as the "
                         "hub's are), which kvcli reads to size Step-3.5's Step3p5MTP",
                         field="spec_method")
    for i, kind in enumerate(target.mtp_layer_kinds[:n]):
        if kind not in target.layer_kinds:
            # (its config convertor gives each MTP layer the settings of the first target layer
            # of its type, list.index: so vLLM never builds a module whose own heads the
            # target's layers did not already split; tests/data/weights_census/drafts2/)
            raise InputError(f"mtp with {target.name}: its MTP layer {target.num_layers + i} "
                             f"is {kind}_attention (mtp_layer_types), a type none of its "
                             "layer_types has, and vLLM refuses the speculative config: "
                             f"\"'{kind}_attention' is not in list\"", field="spec_method")
    modules = set(zip(target.mtp_layer_kinds[:n], target.mtp_moe_layers[:n],
                      target.mtp_layer_heads[:n], strict=True))
    if len(modules) > 1:
        # (each module sized as a copy of the last: `DraftModel.repeated`)
        raise InputError(f"mtp with {target.name}: its {n} MTP modules differ in kind, MoE or "
                         "heads (mtp_layer_types, mtp_mlp_layer_types), which kvcli does not "
                         "size", field="spec_method")
    kind, moe, heads = modules.pop()
    h = target.hidden_size
    one = replace(target, name=name, layer_kinds=(kind,), moe_layers=(moe,),
                  layer_heads=(heads,), counted_moe_layers=int(moe), mtp_layers=0,
                  mtp_layer_kinds=(), mtp_moe_layers=(), mtp_layer_heads=())
    # (the n layers' caches; their weights n copies of the one layer's)
    g = replace(one, layer_kinds=(kind,) * n, moe_layers=(moe,) * n, layer_heads=(heads,) * n,
                counted_moe_layers=n * int(moe))
    # (its decoder layer sized as a one-layer Step-3.5's, `kvcore.models.step3p5`; its LM
    # head split over the workers, padded as vLLM pads a vocabulary)
    padded = -(-target.vocab_size // VOCAB_PAD) * VOCAB_PAD
    return DraftModel(name, "mtp", "Step3p5MTP", g, split_params=n * padded * h,
                      whole_params=n * (2 * h * h + 3 * h), id_map_entries=0,
                      lm_head_rows=target.vocab_size, pass_whole=2 * h * h,
                      target=one, repeated=n)
