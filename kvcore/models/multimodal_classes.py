"""The multimodal classes of vLLM 0.33's registry (model_executor/models/registry.py
`_MULTIMODAL_MODELS`: 127 architectures, recorded in tests/data/multimodal_classes/), and the
warning for those whose tower kvcli does not count.

vLLM builds such a class's encoder (a vision or audio tower, with its projector) beside the
language model and loads it with the weights on the first pipeline stage, so it is memory the
KV cache does not get. kvcli counts the towers `kvcore.models.vision_towers` dispatches; for
any other multimodal class its weights estimate is the language model's alone and the KV
memory it sizes is over-estimated by the tower's weights: said once, in `kvcli config`'s and a
replay's warnings. Not said where vLLM builds no tower (``--language-model-only``) or where
the weights are not estimated (``--weights-gib``, ``--num-blocks``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.models.geometry import ModelGeometry

if TYPE_CHECKING:     # (mm_serving reads the table: no import back at run time)
    from kvcore.models.mm_serving import MMState

MULTIMODAL_CLASSES = frozenset({
    "Alpamayo2Super", "AriaForConditionalGeneration", "AudioFlamingo3ForConditionalGeneration",
    "BagelForConditionalGeneration", "BailingMoeV3VLForConditionalGeneration",
    "BeeForConditionalGeneration", "Blip2ForConditionalGeneration",
    "Cohere2VisionForConditionalGeneration", "CohereAsrForConditionalGeneration",
    "CohereCompassForConditionalGeneration", "Cosmos3EdgeForConditionalGeneration",
    "Cosmos3ForConditionalGeneration", "DeepseekOCR2ForCausalLM", "DeepseekOCRForCausalLM",
    "DeepseekV41ForCausalLM", "DeepseekV4ForConditionalGeneration", "DeepseekVLV2ForCausalLM",
    "DiffusionGemmaForBlockDiffusion", "Dots3NoteForCausalLM", "DotsOCRForCausalLM",
    "Eagle2_5_VLForConditionalGeneration", "Ernie4_5_VLMoeForConditionalGeneration",
    "Exaone4_5_ForConditionalGeneration", "FireRedASR2ForConditionalGeneration",
    "FunASRForConditionalGeneration", "FunAudioChatForConditionalGeneration",
    "GLM4VForCausalLM", "Gemma3ForConditionalGeneration", "Gemma3nForConditionalGeneration",
    "Gemma4ForConditionalGeneration", "Gemma4UnifiedForConditionalGeneration",
    "Glm4vForConditionalGeneration", "Glm4vMoeForConditionalGeneration",
    "Glm5NextForConditionalGeneration", "GlmAsrForConditionalGeneration",
    "GlmOcrForConditionalGeneration", "Granite4VisionForConditionalGeneration",
    "GraniteSpeechForConditionalGeneration", "GraniteSpeechPlusForConditionalGeneration",
    "H2OVLChatModel", "HfMoondream", "Idefics3ForConditionalGeneration",
    "InternS1ForConditionalGeneration", "InternS1ProForConditionalGeneration",
    "InternS2MobiusForConditionalGeneration", "InternS2PreviewForConditionalGeneration",
    "InternVLChatModel", "InternVLForConditionalGeneration", "IsaacForConditionalGeneration",
    "KananaVForConditionalGeneration", "KeyeForConditionalGeneration",
    "KeyeVL1_5ForConditionalGeneration", "KimiK25ForConditionalGeneration",
    "KimiK3ForConditionalGeneration", "KimiVLForConditionalGeneration",
    "Lfm2VlForConditionalGeneration", "LightOnOCRForConditionalGeneration",
    "Llama4ForConditionalGeneration", "Llama_Nemotron_Nano_VL",
    "LlavaForConditionalGeneration", "LlavaNextForConditionalGeneration",
    "LlavaNextVideoForConditionalGeneration", "LlavaOnevision2ForConditionalGeneration",
    "LlavaOnevisionForConditionalGeneration", "MiDashengLMModel", "MiMoV2OmniForCausalLM",
    "MiniCPMO", "MiniCPMOcrForConditionalGeneration", "MiniCPMV",
    "MiniCPMV4_6ForConditionalGeneration", "MiniCPMV4_7ForConditionalGeneration",
    "MiniMaxM3SparseForConditionalGeneration", "Mistral3ForConditionalGeneration",
    "Molmo2ForConditionalGeneration", "MolmoForCausalLM", "Moondream3ForCausalLM",
    "MoonshotKimiaForCausalLM", "MossAudioModel",
    "MossTranscribeDiarizeForConditionalGeneration", "MuseGlimmerForConditionalGeneration",
    "MuseSparkForConditionalGeneration", "NVLM_D", "NemotronH_Nano_Omni_Reasoning_V3",
    "NemotronH_Nano_VL_V2", "NemotronH_Omni_Reasoning_V3", "NemotronH_Super_Omni_Reasoning_V3",
    "NemotronParseForConditionalGeneration", "OpenCUAForConditionalGeneration",
    "OpenPanguVLForConditionalGeneration", "OpenVLAForActionPrediction", "Ovis", "Ovis2_5",
    "Ovis2_6ForCausalLM", "Ovis2_6_MoeForCausalLM", "PaddleOCRVLForConditionalGeneration",
    "PaliGemmaForConditionalGeneration", "Phi3VForCausalLM", "Phi4ForCausalLMV",
    "Phi4MMForCausalLM", "PixtralForConditionalGeneration",
    "QianfanOCRForConditionalGeneration", "Qwen2AudioForConditionalGeneration",
    "Qwen2VLForConditionalGeneration", "Qwen2_5OmniForConditionalGeneration",
    "Qwen2_5OmniModel", "Qwen2_5_VLForConditionalGeneration",
    "Qwen3ASRForConditionalGeneration", "Qwen3ASRRealtimeGeneration",
    "Qwen3OmniMoeForConditionalGeneration", "Qwen3VLForConditionalGeneration",
    "Qwen3VLMoeForConditionalGeneration", "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration", "Qwen4ExpForConditionalGeneration",
    "RForConditionalGeneration", "RadioMBartPrefixForCausalLM", "SkyworkR1VChatModel",
    "SmolVLMForConditionalGeneration", "Step3VLForConditionalGeneration",
    "Step3p7ForConditionalGeneration", "Step5ForConditionalGeneration",
    "StepVLForConditionalGeneration", "UltravoxModel", "UnlimitedOCRForCausalLM",
    "VoxtralForConditionalGeneration", "VoxtralRealtimeGeneration",
    "WhisperForConditionalGeneration"})


def uncounted_tower_note(g: ModelGeometry, mm: MMState | None, memory: str, blocks: str,
                         weights: str | None = None) -> str | None:
    """The warning that `g`'s multimodal tower is left out of its weights (None: counted, no
    tower built, or not a multimodal class), naming the options that fix it as the command
    spells them."""
    if g.architecture not in MULTIMODAL_CLASSES or g.vision_modalities:
        return None
    if mm is not None and mm.language_model_only:
        return None     # (vLLM builds no tower either: the language model is all it loads)
    known = f"the weights' known size ({weights}), or " if weights else ""
    return (f"{g.name}'s multimodal tower ({g.architecture}'s vision or audio encoder and its "
            "projector) is not counted: kvcli does not model it, so its weights are the "
            "language model's alone and the KV memory is over-estimated by the tower's "
            f"weights: give {known}{blocks}, or {memory} less the tower's size")
