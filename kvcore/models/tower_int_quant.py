"""A vision tower's linears under AWQ, GPTQ or compressed-tensors, as vLLM 0.33 builds them on a
rank: the LLaVA family's, Mistral 3's, PaliGemma's, GLM-4.1V's / GLM-4.5V's, the Qwen-VL
towers', InternVL's remote-code classes', MiniCPM-V's, Idefics3's, Phi-3-vision's and the omni
thinkers' (`PREFIXES`, whose classes pass their quant_config to the tower; the linears each
lists: `kvcore.models.clip_siglip`, `pixtral_hf`, `llava`, `glm4v_tower`, `qwen3_5`, `qwen_vl`,
`internvl_chat`, `minicpmv`, `idefics3`, `phi3v`, `qwen_omni`).

Each linear is packed as the language model's are (`kvcore.models.int_quant.linear_bytes`,
`kvcore.models.ct_quant.linear_bytes`) unless the checkpoint's list leaves it out: AWQ's
``modules_to_not_convert`` as substrings of its vLLM path (a fused one by its own path or all
its shards'), compressed-tensors' ``ignore`` and targets (`kvcore.models.ct_groups`), GPTQ's
``dynamic`` rules and ``modules_in_block_to_quantize`` (`kvcore.models.gptq_rules`). A shard
vLLM cannot pack at the TP size is refused in its words (AWQ's "The input size is not aligned
...", compressed-tensors' W4A16 "... is not divisible by group_size"), the tower first, as vLLM
builds it first. Census tests/data/weights_census/quant_towers/, quant2/ (Qwen3-VL-MoE) and
quant_towers3/.
"""

from __future__ import annotations

from kvcore.models import ct_groups, ct_quant, gptq_rules
from kvcore.models.fused_shards import all_or_none
from kvcore.models.geometry import ModelGeometry
from kvcore.models.int_quant import IntQuant, awq_refusal, linear_bytes
from kvcore.models.tower_cast import cast_bytes, cast_paths
from kvcore.models.vision_keys import VisionLinear, built_at, linears_loaded, rank_shape

_LLAVA = ("vision_tower", "multi_modal_projector")
# (the classes whose tower takes the quant_config, with the prefixes of the modules they build
# with it; OneVision's and PaliGemma's projectors are plain nn.Linear or take none, Gemma 3's
# is a bare weight)
PREFIXES = {
    "LlavaForConditionalGeneration": _LLAVA,
    "LlavaNextForConditionalGeneration": _LLAVA,
    "Mistral3ForConditionalGeneration": _LLAVA,
    "LlavaOnevisionForConditionalGeneration": ("vision_tower",),
    "PaliGemmaForConditionalGeneration": ("vision_tower",),
    "Gemma3ForConditionalGeneration": ("vision_tower",),
    "Glm4vForConditionalGeneration": ("visual",),
    "Glm4vMoeForConditionalGeneration": ("visual",),
    "Qwen3VLForConditionalGeneration": ("visual",),
    "Qwen3VLMoeForConditionalGeneration": ("visual",),
    # (Qwen2-VL's, Qwen2.5-VL's and Qwen3.5's, whose linears `kvcore.models.qwen_vl` and
    # `qwen3_5` list for fp8)
    "Qwen2VLForConditionalGeneration": ("visual",),
    "Qwen2_5_VLForConditionalGeneration": ("visual",),
    "Qwen3_5ForConditionalGeneration": ("visual",),
    "Qwen3_5MoeForConditionalGeneration": ("visual",),
    # (InternVL's remote-code classes: InternViT at vision_model; mlp1 plain nn.Linear but
    # Skywork-R1V's, `kvcore.models.internvl_chat`)
    "InternVLChatModel": ("vision_model",),
    "H2OVLChatModel": ("vision_model",),
    "NVLM_D": ("vision_model",),
    "SkyworkR1VChatModel": ("vision_model", "mlp1"),
    # (MiniCPM-V's NaViT and resampler kv_proj, Idefics3's / SmolVLM's NaViT and connector,
    # Phi-3-vision's CLIP, the omni thinkers' vision towers (not their audio encoders, built
    # without it): `kvcore.models.minicpmv`, `idefics3`, `phi3v`, `qwen_omni`)
    "MiniCPMV": ("vpm", "resampler"),
    "Idefics3ForConditionalGeneration": ("model.vision_model", "model.connector"),
    "SmolVLMForConditionalGeneration": ("model.vision_model", "model.connector"),
    "Phi3VForCausalLM": ("model.vision_embed_tokens",),
    "Qwen2_5OmniModel": ("visual",),
    "Qwen2_5OmniForConditionalGeneration": ("visual",),
    "Qwen3OmniMoeForConditionalGeneration": ("visual",),
    # (DeepSeek-VL2's timm MLPs above TP 1, at prefixes without "vision.":
    # `kvcore.models.deepseek_vl2`)
    "DeepseekVLV2ForCausalLM": ("blocks", "attn_pool"),
    # (Keye-VL's SigLIP and projector: `kvcore.models.keye_tower`; ERNIE-4.5-VL's ViT blocks,
    # its resampler reading a quant_config off the hf_config, which has none:
    # `kvcore.models.ernie45_vl_tower`, its language model `kvcore.models.ernie45_vl_quant`)
    "KeyeForConditionalGeneration": ("visual", "mlp_AR"),
    "KeyeVL1_5ForConditionalGeneration": ("visual", "mlp_AR"),
    "Ernie4_5_VLMoeForConditionalGeneration": ("vision_model",),
    # (Voxtral's Whisper encoder, not its adapter's plain nn.Linear: `kvcore.models.voxtral`)
    "VoxtralForConditionalGeneration": ("whisper_encoder",),
    # (Molmo's ViT, pooling and projector: `kvcore.models.molmo`)
    "MolmoForCausalLM": ("vision_backbone",),
}
# (the classes that build their language model before the tower, so that vLLM meets its
# refusals first: minicpmv.py's init_llm before init_vision_module; voxtral.py's)
LLM_FIRST = ("MiniCPMV", "VoxtralForConditionalGeneration")
# (a packed linear on a rank: its path, output shards, input shard, whole input, settings)
Packed = tuple[str, tuple[int, ...], int, int, IntQuant]


def _awq_skipped(q: IntQuant, lin: VisionLinear, source: str) -> bool:
    if any(s in lin.path for s in q.skips) or not lin.shards:
        return any(s in lin.path for s in q.skips)
    proj = lin.path.rsplit(".", 1)[1]
    named = [any(s in lin.path[: -len(proj)] + sh for s in q.skips) for sh in lin.shards]
    return all_or_none(named, lambda: f"the list names some but not all shards of {lin.path}",
                       lin.path, source, "quantization_config.modules_to_not_convert")


def _quant(g: ModelGeometry, q: IntQuant, lin: VisionLinear) -> IntQuant | None:
    """The settings vLLM packs the tower linear with; None where it leaves it unquantised."""
    shards = lin.shards or None
    if q.family == "gptq":
        return gptq_rules.module_quant(q, lin.path, shards, g.source) \
            if q.rules or q.blocks else q
    if q.family == "ct":
        return ct_groups.linear_quant(q, lin.path, shards, g.source)
    return None if _awq_skipped(q, lin, g.source) else q


def takes_quant(g: ModelGeometry, loaded: bool) -> bool:
    """Whether the class builds its tower with the quant_config and, where `loaded`, the tower
    is loaded (not under ``--language-model-only`` or limits of 0, where vLLM still constructs
    it: its refusals stand; `vision_keys.linears_loaded`)."""
    return g.architecture in PREFIXES and not (loaded and not linears_loaded(
        g.vision_params, g.vision_kept, g.vision_parts))


def packed(g: ModelGeometry, q: IntQuant, tp: int, loaded: bool = True) -> list[Packed]:
    """The tower's packed linears on a rank of `tp` (none where not `takes_quant`)."""
    if not takes_quant(g, loaded):
        return []
    out = []
    for lin in built_at(g.vision_linears, tp):
        if (mq := _quant(g, q, lin)) is not None:
            parts, k = rank_shape(lin, tp)
            out.append((lin.path, parts, k, lin.inp, mq))
    return out


def rank_bytes(g: ModelGeometry, q: IntQuant, tp: int, dtype_bytes: int) -> tuple[int, int]:
    """(parameters the packed tensors replace, their bytes) of the tower on a rank."""
    moved = held = 0
    cast = cast_paths(g.vision_linears)
    for path, parts, k, full, mq in packed(g, q, tp):
        moved += sum(parts) * k
        b = ct_quant.linear_bytes(mq, parts, k, dtype_bytes) if q.family == "ct" else \
            linear_bytes(mq, sum(parts), k, full, dtype_bytes)
        # (cast to the model dtype: compressed-tensors' fp8 and int8 weights' float32 scales,
        # and fp8 weights; packed int32 and 2-byte scales keep their size)
        one_byte = q.family == "ct" and mq.scheme in ("fp8", "int8")
        held += cast_bytes(b, sum(parts) * k, mq.scheme == "fp8", dtype_bytes) \
            if path in cast and one_byte else b
    return moved, held


def refusal(g: ModelGeometry, q: IntQuant, tp: int) -> tuple[str, str, int] | None:
    """The first tower linear vLLM refuses at `tp`: (its path, vLLM's words, its group); the
    tower is constructed on the meta device even where it is skipped, so its refusals stand."""
    if q.family == "gptq":
        return None
    for path, parts, k, full, mq in packed(g, q, tp, loaded=False):
        if why := (ct_quant.group_refusal(mq, k, path) if q.family == "ct" else
                   awq_refusal(mq, sum(parts), k, full)):
            return path, why, mq.group_size
    return None
