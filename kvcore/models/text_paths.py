"""A multimodal class's language-model linears by the path vLLM 0.33 builds them at, which its
refusals name (compressed-tensors' "Weight input_size_per_partition=64 for layer
'language_model.model.layers.0.self_attn.o_proj' ..."): kvcli's text paths say
``model.layers.N...``, the text model's own, where the class builds that model under a prefix
(`maybe_prefix(prefix, "language_model")` in llava.py, mistral3.py, qwen2_vl.py, internvl.py,
...; MiniCPM-V's ``llm``; Idefics3's and SmolVLM's LlamaModel at ``model.text_model``).
Checked against vLLM's refusals in tests/data/weights_census/quant_towers/, quant_towers3/ and
quant_voxtral/ (the ``-ct-w4a16`` cases at TP 2 to 8)."""

from __future__ import annotations

# (architecture: vLLM's prefix before the text model's ``model.``; the classes whose text model
# is the class's own ``model`` (Phi-3-vision, Phi-4-multimodal) need none)
_PREFIXES = dict.fromkeys((
    "LlavaForConditionalGeneration", "LlavaNextForConditionalGeneration",
    "LlavaNextVideoForConditionalGeneration", "InternS1ProForConditionalGeneration",
    "LlavaOnevisionForConditionalGeneration", "Mistral3ForConditionalGeneration",
    "PaliGemmaForConditionalGeneration", "Gemma3ForConditionalGeneration",
    "Glm4vForConditionalGeneration", "Glm4vMoeForConditionalGeneration",
    "Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration",
    "Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration",
    "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
    "InternVLChatModel", "H2OVLChatModel", "NVLM_D", "SkyworkR1VChatModel",
    "InternVLForConditionalGeneration", "InternS1ForConditionalGeneration",
    "Qwen2AudioForConditionalGeneration", "VoxtralForConditionalGeneration",
    "Qwen2_5OmniModel", "Qwen2_5OmniForConditionalGeneration",
    "Qwen3OmniMoeForConditionalGeneration",
), "language_model.") | {"MiniCPMV": "llm.", "MiniCPMO": "llm."}
# (the text model's ``model.`` itself moved: LlamaModel built at ``model.text_model``)
_TEXT_MODEL = ("Idefics3ForConditionalGeneration", "SmolVLMForConditionalGeneration")


def vllm_text_path(architecture: str, path: str) -> str:
    """`path` (kvcli's, ``model.layers.N...``) as vLLM names it in the class `architecture`."""
    if architecture in _TEXT_MODEL and path.startswith("model."):
        return "model.text_model." + path.removeprefix("model.")
    return _PREFIXES.get(architecture, "") + path


def wraps_text_model(architecture: str) -> bool:
    """Whether vLLM builds the class's text model under a path of its own."""
    return architecture in _PREFIXES or architecture in _TEXT_MODEL


def kvcli_text_path(architecture: str, name: str) -> str | None:
    """vLLM's `name` in the class `architecture` as kvcli's path (`vllm_text_path` undone);
    None for a name outside its text model."""
    head = vllm_text_path(architecture, "model.")
    return "model." + name.removeprefix(head) if name.startswith(head) else None
