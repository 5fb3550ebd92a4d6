"""The MoE classes vLLM 0.33 refuses to build when none of their layers is a MoE layer (a
config whose dense-layer keys cover every layer: first_k_dense_replace, mlp_only_layers,
num_dense_layers, moe_layers_enum). Each class looks for an example MoE layer as it is built
(its MixtureOfExperts parameters) and raises without one; the words are vLLM's. Found by
tests/data/size_fuzz."""

from __future__ import annotations

from kvcore.errors import InputError
from kvcore.models.geometry import ModelGeometry

WORDS = {
    "Glm4MoeForCausalLM": "No Glm4MoE layer found in model.layers.",        # glm4_moe.py:509
    "Glm4MoeLiteForCausalLM": "No Glm4MoE layer found in model.layers.",    # (its mixin)
    "HYV3ForCausalLM": "No MoE layer found in model.layers.",               # hy_v3.py:486
    "Lfm2MoeForCausalLM": "No Lfm2MoeSparseMoeBlock layer found in the model.layers.",
    "MixtralForCausalLM": "No MixtralMoE layer found  in model.layers.",    # (sic: mixtral.py)
    "Qwen3MoeForCausalLM": "No Qwen3MoE layer found in the model.layers.",
    "Qwen3NextForCausalLM": "No Qwen3Next layer found in the model.layers.",
    "Step3p5ForCausalLM": "No MoE layers found in the model.",              # step3p5.py:896
}


def refuse_moe_free(g: ModelGeometry) -> None:
    """Raise vLLM's refusal of a MoE class with no MoE layer (none: return)."""
    words = WORDS.get(g.architecture)
    if words is not None and g.layer_kinds and not any(g.moe_layers):
        raise InputError(f"{g.name} ({g.architecture}) keeps no MoE layer in its "
                         f"{len(g.layer_kinds)} layers, and vLLM refuses to build it: "
                         f"'{words}'", field="num_hidden_layers")
