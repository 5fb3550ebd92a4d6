"""What vLLM 0.33 refuses to build of a MoE model. A class none of whose layers is a MoE layer
(a config whose dense-layer keys cover every layer: first_k_dense_replace, mlp_only_layers,
num_dense_layers, moe_layers_enum): each class looks for an example MoE layer as it is built
(its MixtureOfExperts parameters) and raises without one, in the words kept here. Experts whose
width does not split over the ranks: an assertion. Both found by tests/data/size_fuzz."""

from __future__ import annotations

from kvcore.errors import InputError
from kvcore.models.geometry import ModelGeometry

WORDS = {
    "Glm4MoeForCausalLM": "No Glm4MoE layer found in model.layers.",        # glm4_moe.py:509
    "Glm4MoeLiteForCausalLM": "No Glm4MoE layer found in model.layers.",    # (its mixin)
    # (glm4_1v.py builds GLM-4.5V's text model as Glm4MoeForCausalLM)
    "Glm4vMoeForConditionalGeneration": "No Glm4MoE layer found in model.layers.",
    "HYV3ForCausalLM": "No MoE layer found in model.layers.",               # hy_v3.py:486
    "InternS1ProForConditionalGeneration":                                  # interns1_pro.py
        "No InternS1ProMoe layer found in the language_model.",
    "Lfm2MoeForCausalLM": "No Lfm2MoeSparseMoeBlock layer found in the model.layers.",
    "MixtralForCausalLM": "No MixtralMoE layer found  in model.layers.",    # (sic: mixtral.py)
    "PanguProMoEV2ForCausalLM": "No MOE layer found in model.layers.",  # openpangu.py:1191
    "Param2MoEForCausalLM": "No Param2MoEMoEBlock found in model.layers. Check "
                            "first_k_dense_replace and num_experts in config.",
    "Qwen3MoeForCausalLM": "No Qwen3MoE layer found in the model.layers.",
    "Qwen3NextForCausalLM": "No Qwen3Next layer found in the model.layers.",
    # (qwen3_5.py: both classes' text model is QwenNextMixtureOfExperts's, which raises first)
    "Qwen3_5MoeForCausalLM": "No Qwen3Next layer found in the model.layers.",
    "Qwen3_5MoeForConditionalGeneration": "No Qwen3Next layer found in the model.layers.",
    "Qwen3VLMoeForConditionalGeneration":                                   # qwen3_vl_moe.py
        "No Qwen3Moe layer found in the language_model.",
    "SarvamMLAForCausalLM": "No SarvamMLAMoE layer found in model.layers.",  # sarvam.py:609
    "Step3p5ForCausalLM": "No MoE layers found in the model.",              # step3p5.py:896
}


# classes that look for a MoE layer only where the config names experts (param2moe.py: where
# num_experts is not None; kvcli reads an absent count as 0)
EXPERTS_NAMED = frozenset({"Param2MoEForCausalLM"})


def refuse_moe_free(g: ModelGeometry) -> None:
    """Raise vLLM's refusal of a MoE class with no MoE layer (none: return)."""
    words = WORDS.get(g.architecture)
    if g.architecture in EXPERTS_NAMED and not g.num_experts:
        return
    if words is not None and g.layer_kinds and not any(g.moe_layers):
        raise InputError(f"{g.name} ({g.architecture}) keeps no MoE layer in its "
                         f"{len(g.layer_kinds)} layers, and vLLM refuses to build it: "
                         f"'{words}'", field="num_hidden_layers")


def refuse_expert_split(g: ModelGeometry, tp: int) -> None:
    """Raise vLLM's refusal of experts (or shared experts) whose width does not split over
    ``tp`` ranks: the shared experts' MergedColumnParallelLinear asserts every output splits
    (linear.py:731), FusedMoE that the experts' intermediate size does (fused_moe/config.py:
    1352); DeepSeek-V2's class default, 1,407 wide, at TP 2 or 4 (unquantised: a quantised
    method pads or refuses by its own rules)."""
    if not g.num_experts or not any(g.moe_layers) or g.quantization is not None:
        return
    width = g.moe_intermediate_size
    shared = g.shared_expert_width or g.num_shared_experts * width
    if width % tp or shared % tp:
        raise InputError(f"{g.name}'s experts are {width} wide" + (
            f" (its shared experts {shared})" if shared else "") + ", which does not split "
            "over the ranks, and vLLM refuses to build it (its assertion: "
            f"'intermediate_size % tp_size == 0'); got {tp}", field="tensor_parallel_size")
