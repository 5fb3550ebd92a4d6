"""An fp8 checkpoint's ignore list as vLLM 0.33 matches it: renamed from the checkpoint's module
names to vLLM's first, by the model class's ``hf_to_vllm_mapper`` (its renames only: the
stacked q/k/v and gate/up entries and the mappings to None are dropped by
WeightsMapper.get_rename_mapper), which Fp8Config.apply_vllm_mapper applies to
``ignored_layers`` when the model is built (model_loader/utils.py configure_quant_config, or
SupportsQuant.__new__). A checkpoint writes Qwen3.5's layers ``model.language_model.layers.N``
and Nemotron-H's ``backbone.layers.N``: unrenamed, they would name nothing.

The classes kvcli reads whose mapper renames a module path; the others (Qwen3-Next, DeepSeek,
GLM-4.5, Gemma 3's text class, Llama, Qwen2/3 and their MoE) only stack or drop names, so their
lists are matched as written. gpt-oss renames too (``.self_attn.`` to ``.attn.``) but is MXFP4,
not fp8. Checked against vLLM (tests/data/weights_census/fp8/, the ``-hf-names`` configs;
weights_census/fp8_wrappers/: LLaVA's and Mistral 3's lists in the checkpoint's, vLLM's and bare
names, which kvcli had matched as written).
"""

from __future__ import annotations

from typing import Any

from kvcore.models.backend_renames import backend_name, served
from kvcore.models.text_paths import kvcli_text_path, wraps_text_model

_QWEN3_5 = ((), (("model.language_model.", "model."),))
# (Qwen3VLForConditionalGeneration's prefixes, its MoE subclass's, which Qwen3.5's multimodal
# classes inherit)
_QWEN3_5_VL = ((), (("model.visual.", "visual."), ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.", "language_model.model.")))
# (Qwen2VLForConditionalGeneration's, which Qwen2.5-VL's repeats: checkpoints after
# transformers 4.52 and the original ones, whose language model is model.layers.N)
_QWEN2_VL = ((), (("model.language_model.", "language_model.model."),
                  ("model.visual.", "visual."), ("lm_head.", "language_model.lm_head."),
                  ("model.", "language_model.model.")))
# (LlavaForConditionalGeneration's, PaliGemma's and InternS1ForConditionalGeneration's (which
# vLLM builds InternVLForConditionalGeneration with): checkpoints after transformers 4.52)
_LLAVA = ((), (("model.language_model.", "language_model.model."),
               ("model.vision_tower.", "vision_tower."),
               ("model.multi_modal_projector.", "multi_modal_projector."),
               ("lm_head.", "language_model.lm_head.")))
# (LLaVA-NeXT's, LLaVA-NeXT-Video's and LLaVA-OneVision's: the image_newline parameter too)
_LLAVA_NEXT = ((), (*_LLAVA[1][:3], ("model.image_newline", "image_newline"), _LLAVA[1][3]))
# (the Qwen Omni thinkers': the thinker's model is vLLM's language model; the talker's and
# the vocoder's mappings to None are dropped, as for every ignore list)
_QWEN2_5_OMNI = ((), (("thinker.lm_head.", "language_model.lm_head."),
                      ("thinker.model.", "language_model.model."), ("thinker.", "")))
# architecture: (substrings renamed, each at its first occurrence; then prefixes), in the
# order WeightsMapper applies them
_RENAMES: dict[str, tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]] = {
    "Qwen3_5ForCausalLM": _QWEN3_5,
    "Qwen3_5MoeForCausalLM": _QWEN3_5,
    "Qwen3_5ForConditionalGeneration": _QWEN3_5_VL,
    "Qwen3_5MoeForConditionalGeneration": _QWEN3_5_VL,
    "Qwen3VLForConditionalGeneration": _QWEN3_5_VL,
    "Qwen3VLMoeForConditionalGeneration": _QWEN3_5_VL,
    "InternS1ProForConditionalGeneration": _QWEN3_5_VL,    # (interns1_pro.py: the same three)
    "Qwen2VLForConditionalGeneration": _QWEN2_VL,
    "Qwen2_5_VLForConditionalGeneration": _QWEN2_VL,
    "LlavaForConditionalGeneration": _LLAVA,
    "PaliGemmaForConditionalGeneration": _LLAVA,
    "InternS1ForConditionalGeneration": _LLAVA,
    "InternVLForConditionalGeneration": _LLAVA,
    "LlavaNextForConditionalGeneration": _LLAVA_NEXT,
    "LlavaNextVideoForConditionalGeneration": _LLAVA_NEXT,
    "LlavaOnevisionForConditionalGeneration": _LLAVA_NEXT,
    # (PEFT's names of its text model, model.layers.N, are vLLM's language model's too)
    "Mistral3ForConditionalGeneration": ((), (*_LLAVA[1], ("model.", "language_model.model."))),
    **dict.fromkeys(("Glm4vForConditionalGeneration", "Glm4vMoeForConditionalGeneration"), ((), (
        ("lm_head.", "language_model.lm_head."),
        ("model.language_model.", "language_model.model."), ("model.visual.", "visual.")))),
    "Qwen2_5OmniModel": _QWEN2_5_OMNI,
    "Qwen2_5OmniForConditionalGeneration": _QWEN2_5_OMNI,
    "Qwen3OmniMoeForConditionalGeneration": ((), (
        *_QWEN2_5_OMNI[1], ("model.", "language_model.model."),
        ("lm_head.", "language_model.lm_head."))),
    "Gemma3ForConditionalGeneration": ((), (
        ("model.language_model.", "language_model.model."),
        ("model.vision_tower.", "vision_tower."),
        ("model.multi_modal_projector.", "multi_modal_projector."),
        ("lm_head.", "language_model.lm_head."))),
    # (its prefix has no dot: "backbone" -> "model" wherever a name starts with it)
    "NemotronHForCausalLM": ((("A_log", "A"), ("embeddings", "embed_tokens")),
                             (("backbone", "model"),)),
    "JambaForCausalLM": (((".self_attn.", "."), (".A_log", ".A")), ()),
    # (lfm2.py, lfm2_moe.py: the checkpoint's conv is vLLM's short_conv)
    "Lfm2ForCausalLM": (((".conv.", ".short_conv."),), ()),
    "Lfm2MoeForCausalLM": (((".conv.", ".short_conv."),), ()),
    "OPTForCausalLM": ((), (("decoder.", "model.decoder."),)),
}
def architecture(archs: Any) -> str:
    return str(archs[0]) if isinstance(archs, list) and archs else ""


def vllm_name(name: str, arch: str) -> str:
    """`name` as vLLM's mapper for `arch` renames it (WeightsMapper._map_name_with_shard)."""
    if served(arch):     # (GPT-NeoX, Phi, GPTBigCode: the Transformers backend's regexes)
        return backend_name(name, arch)
    substrings, prefixes = _RENAMES.get(arch, ((), ()))
    for old, new in substrings:
        if old in name:
            name = name.replace(old, new, 1)
    for old, new in prefixes:
        if name.startswith(old):
            name = name.replace(old, new, 1)
    return name


def ignored_as_matched(names: tuple[str, ...], arch: str) -> tuple[tuple[str, str], ...]:
    """The list in the frame kvcli's linear paths use (``model.layers.N...``), each with the
    name as the config wrote it (for messages): renamed as vLLM renames it; for a multimodal
    class, only the names inside its language model, moved from vLLM's frame
    (``language_model.model.``: `kvcore.models.text_paths`; the rest, its vision tower's or a
    bare ``model.layers.N``, name none of the language model's linears in vLLM; the tower's
    are matched in vLLM's own frame: `kvcore.models.fp8_vision`)."""
    out = tuple((vllm_name(n, arch), n) for n in names)
    if not wraps_text_model(arch):
        return out
    return tuple((path, w) for n, w in out if (path := kvcli_text_path(arch, n)) is not None)
