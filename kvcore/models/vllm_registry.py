"""The architecture names vLLM 0.33's model registry knows (model_executor/models/registry.py
`_VLLM_MODELS`: its text-generation, multimodal, embedding, late-interaction, reward,
classification, speculative-decoding, Transformers-supported and Transformers-backend tables;
415 names, the same the PP census lists: tests/data/pp_support/answers.json).

A config.json naming another architecture is served by vLLM 0.33 only through its Transformers
backend (`model_impl` auto: `ModelConfig._get_transformers_backend_cls`, when transformers or
the checkpoint's remote code has the class), which builds plain attention from the config's
heads: kvcli reads it so too, and says so (`unregistered_note`), so a misspelt name is not sized
silently as something it is not.
"""

from __future__ import annotations

REGISTRY = frozenset({
    "AXK1ForCausalLM", "AfmoeForCausalLM", "AliceAIForCausalLM", "Alpamayo2Super",
    "ApertusForCausalLM", "ArceeForCausalLM", "AriaForConditionalGeneration",
    "AudioFlamingo3ForConditionalGeneration", "BagelForConditionalGeneration",
    "BailingMoeForCausalLM", "BailingMoeV25MTPModel", "BailingMoeV2ForCausalLM",
    "BailingMoeV2_5ForCausalLM", "BailingMoeV3ForCausalLM", "BailingMoeV3MTPModel",
    "BailingMoeV3VLForConditionalGeneration", "BeamForCausalLM", "BeeForConditionalGeneration",
    "BertForMaskedLM", "BertForSequenceClassification", "BertForTokenClassification", "BertModel",
    "BertSpladeSparseEmbeddingModel", "BgeM3EmbeddingModel", "Blip2ForConditionalGeneration",
    "BloomForCausalLM", "CLIPModel", "ChatGLMForConditionalGeneration", "ChatGLMModel",
    "ClefFlashForJointSchema", "ClefOmniForJointSchema", "Cohere2ForCausalLM",
    "Cohere2MoeForCausalLM", "Cohere2VisionForConditionalGeneration",
    "CohereAsrForConditionalGeneration", "CohereCompassForConditionalGeneration",
    "CohereForCausalLM", "ColBERTJinaRobertaModel", "ColBERTLfm2Model", "ColBERTModernBertModel",
    "ColModernVBertForRetrieval", "ColPaliForRetrieval", "ColQwen3", "ColQwen3_5",
    "ColUltraVBertForRetrieval", "Cosmos3EdgeForConditionalGeneration",
    "Cosmos3ForConditionalGeneration", "CwmForCausalLM", "D3ForSequenceClassification",
    "DFlash2BeamDraftModel", "DFlash2DraftModel", "DFlashDraftModel", "DFlashLagunaForCausalLM",
    "DFlashMuseGlimmerAssistantModel", "DFlashQwen3XPressModel", "DSparkDraftModel",
    "DSparkV41DraftModel", "DbrxForCausalLM", "DeciLMForCausalLM", "DeepSeekMTPModel",
    "DeepSeekV4MTPModel", "DeepseekForCausalLM", "DeepseekOCR2ForCausalLM",
    "DeepseekOCRForCausalLM", "DeepseekV2ForCausalLM", "DeepseekV32ForCausalLM",
    "DeepseekV32MTPModel", "DeepseekV3BidirectionalModel", "DeepseekV3ForCausalLM",
    "DeepseekV41ForCausalLM", "DeepseekV4ForCausalLM", "DeepseekV4ForConditionalGeneration",
    "DeepseekVLV2ForCausalLM", "DiffusionGemmaForBlockDiffusion", "DomynEdgeForCausalLM",
    "DoryForCausalLM", "Dots3NoteForCausalLM", "Dots3NoteMTPModel", "DotsOCRForCausalLM",
    "Eagle2_5_VLForConditionalGeneration", "Eagle3DeepseekV2ForCausalLM",
    "Eagle3DeepseekV3ForCausalLM", "Eagle3LlamaForCausalLM", "Eagle3MiniMaxM2ForCausalLM",
    "Eagle3Qwen2_5vlForCausalLM", "Eagle3Qwen3ForCausalLM", "Eagle3Qwen3vlForCausalLM",
    "EagleCohereForCausalLM", "EagleDeepSeekMTPModel", "EagleLlama4ForCausalLM",
    "EagleLlamaForCausalLM", "EagleMiniCPMForCausalLM", "EagleMistralForCausalLM",
    "EagleMistralLarge3ForCausalLM", "EmbeddingGemma2Model", "Emu3ForConditionalGeneration",
    "Ernie4_5ForCausalLM", "Ernie4_5_MoeForCausalLM", "Ernie4_5_VLMoeForConditionalGeneration",
    "ErnieMTPModel", "Exaone4ForCausalLM", "Exaone4_5_ForConditionalGeneration", "Exaone4_5_MTP",
    "ExaoneForCausalLM", "ExaoneMoEForCausalLM", "ExaoneMoeForCausalLM", "ExaoneMoeMTP",
    "ExtractHiddenStatesModel", "FalconForCausalLM", "FalconH1ForCausalLM",
    "FalconMambaForCausalLM", "FireRedASR2ForConditionalGeneration", "FlexOlmoForCausalLM",
    "FlintForCausalLM", "FunASRForConditionalGeneration", "FunAudioChatForConditionalGeneration",
    "GLM4VForCausalLM", "GPT2ForSequenceClassification", "GPT2LMHeadModel",
    "GPTBigCodeForCausalLM", "GPTJForCausalLM", "GPTNeoXForCausalLM", "Gemma2ForCausalLM",
    "Gemma2Model", "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration", "Gemma3TextModel",
    "Gemma3nForCausalLM", "Gemma3nForConditionalGeneration", "Gemma4DSparkModel",
    "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration", "Gemma4MTPModel",
    "Gemma4UnifiedForConditionalGeneration", "GemmaForCausalLM", "Glm4ForCausalLM",
    "Glm4MoeForCausalLM", "Glm4MoeLiteForCausalLM", "Glm4MoeLiteMTPModel", "Glm4MoeMTPModel",
    "Glm4vForConditionalGeneration", "Glm4vMoeForConditionalGeneration", "Glm5NextForCausalLM",
    "Glm5NextForConditionalGeneration", "Glm5NextMTPModel", "GlmAsrForConditionalGeneration",
    "GlmForCausalLM", "GlmMoeDsaForCausalLM", "GlmOcrForConditionalGeneration", "GlmOcrMTPModel",
    "GptOssForCausalLM", "Granite4VisionForConditionalGeneration", "GraniteForCausalLM",
    "GraniteMoeForCausalLM", "GraniteMoeHybridForCausalLM", "GraniteMoeSWAForCausalLM",
    "GraniteMoeSharedForCausalLM", "GraniteSWAForCausalLM",
    "GraniteSpeechForConditionalGeneration", "GraniteSpeechPlusForConditionalGeneration",
    "GteModel", "GteNewForSequenceClassification", "GteNewModel", "H2OVLChatModel",
    "HCXVisionV2ForCausalLM", "HF_ColBERT", "HYV3ForCausalLM", "HYV3MTPModel", "HYV4ForCausalLM",
    "HYV4MTPModel", "HfMoondream", "HrmTextForCausalLM", "HunYuanDenseV1ForCausalLM",
    "HunYuanMoEV1ForCausalLM", "HunYuanVLForConditionalGeneration", "HyperCLOVAXForCausalLM",
    "IQuestCoderForCausalLM", "IQuestLoopCoderForCausalLM", "Idefics3ForConditionalGeneration",
    "InklingForCausalLM", "InklingForConditionalGeneration", "InklingMTPModel",
    "InternLM2ForCausalLM", "InternLM2ForRewardModel", "InternLM3ForCausalLM",
    "InternS1ForConditionalGeneration", "InternS1ProForConditionalGeneration",
    "InternS2MobiusForConditionalGeneration", "InternS2MobiusMTP",
    "InternS2PreviewForConditionalGeneration", "InternVLChatModel",
    "InternVLForConditionalGeneration", "IsaacForConditionalGeneration", "Jais2ForCausalLM",
    "JambaForCausalLM", "JambaForSequenceClassification", "JinaEmbeddingsV5Model",
    "JinaForRanking", "JinaVLForRanking", "K2HorizonForCausalLM", "K3DSparkModel",
    "KananaVForConditionalGeneration", "KeyeForConditionalGeneration",
    "KeyeVL1_5ForConditionalGeneration", "KimiK25ForConditionalGeneration",
    "KimiK3ForConditionalGeneration", "KimiK3MTPModel", "KimiLinearForCausalLM",
    "KimiVLForConditionalGeneration", "Kolibri1ForCausalLM", "LLaMAForCausalLM",
    "LagunaForCausalLM", "Lfm2BidirectionalModel", "Lfm2ForCausalLM", "Lfm2MoeForCausalLM",
    "Lfm2VlForConditionalGeneration", "LiLiCorrDraftModel", "LightOnOCRForConditionalGeneration",
    "Llama4ForCausalLM", "Llama4ForConditionalGeneration",
    "LlamaBidirectionalForSequenceClassification", "LlamaBidirectionalModel", "LlamaForCausalLM",
    "LlamaForCausalLMEagle3", "LlamaModel", "LlamaNemotronVLForSequenceClassification",
    "LlamaNemotronVLModel", "Llama_Nemotron_Nano_VL", "LlavaForConditionalGeneration",
    "LlavaNextForConditionalGeneration", "LlavaNextVideoForConditionalGeneration",
    "LlavaOnevision2ForConditionalGeneration", "LlavaOnevisionForConditionalGeneration",
    "LongCatFlashMTPModel", "LongcatFlashForCausalLM", "LongcatFlashNgramForCausalLM",
    "Mamba2ForCausalLM", "MambaForCausalLM", "MellumForCausalLM", "MiDashengLMModel",
    "MiMoForCausalLM", "MiMoMTPModel", "MiMoV2FlashForCausalLM", "MiMoV2ForCausalLM",
    "MiMoV2MTPModel", "MiMoV2OmniForCausalLM", "MiMoV2OmniMTPModel", "MiniCPM3ForCausalLM",
    "MiniCPMForCausalLM", "MiniCPMO", "MiniCPMOcrForConditionalGeneration", "MiniCPMV",
    "MiniCPMV4_6ForConditionalGeneration", "MiniCPMV4_7ForConditionalGeneration",
    "MiniMaxM2ForCausalLM", "MiniMaxM3MTP", "MiniMaxM3SparseForCausalLM",
    "MiniMaxM3SparseForConditionalGeneration", "Ministral3ForCausalLM",
    "Mistral3ForConditionalGeneration", "MistralForCausalLM", "MistralLarge3ForCausalLM",
    "MistralModel", "MixtralForCausalLM", "ModernBertForSequenceClassification",
    "ModernBertForTokenClassification", "ModernBertModel", "ModernVBertModel",
    "Molmo2ForConditionalGeneration", "MolmoForCausalLM", "Moondream3ForCausalLM",
    "MoonshotKimiaForCausalLM", "MossAudioModel", "MossTranscribeDiarizeForConditionalGeneration",
    "MuseGlimmerAssistantModel", "MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration",
    "MuseSparkDSparkModel", "MuseSparkForConditionalGeneration", "NVLM_D", "NanbeigeForCausalLM",
    "NemotronForCausalLM", "NemotronHForCausalLM", "NemotronHMTPModel",
    "NemotronHPuzzleForCausalLM", "NemotronH_Nano_Omni_Reasoning_V3", "NemotronH_Nano_VL_V2",
    "NemotronH_Omni_Reasoning_V3", "NemotronH_Super_Omni_Reasoning_V3",
    "NemotronParseForConditionalGeneration", "NomicBertModel", "OPTForCausalLM",
    "Olmo2ForCausalLM", "Olmo3ForCausalLM", "OlmoForCausalLM", "OlmoHybridForCausalLM",
    "OlmoeForCausalLM", "OpenAIPrivacyFilterForTokenClassification",
    "OpenCUAForConditionalGeneration", "OpenPanguMTPModel", "OpenPanguVLForConditionalGeneration",
    "OpenVLAForActionPrediction", "OpsColQwen3Model", "OrionForCausalLM", "Ovis", "Ovis2_5",
    "Ovis2_6ForCausalLM", "Ovis2_6_MoeForCausalLM", "PEagleDraftModel",
    "PaddleOCRVLForConditionalGeneration", "PaliGemmaForConditionalGeneration",
    "PanguEmbeddedForCausalLM", "PanguProMoEV2ForCausalLM", "PanguUltraMoEForCausalLM",
    "Param2MoEForCausalLM", "ParseAuxMTPModel", "PeagleLlamaForCausalLM", "PeagleQwen3ForCausalLM",
    "Phi3ForCausalLM", "Phi3VForCausalLM", "Phi4ForCausalLMV", "Phi4MMForCausalLM",
    "PhiForCausalLM", "PhiMoEForCausalLM", "PixtralForConditionalGeneration", "Plamo3ForCausalLM",
    "QianfanOCRForConditionalGeneration", "Qwen2AudioForConditionalGeneration", "Qwen2ForCausalLM",
    "Qwen2ForProcessRewardModel", "Qwen2ForRewardModel", "Qwen2Model", "Qwen2MoeForCausalLM",
    "Qwen2VLForConditionalGeneration", "Qwen2_5OmniForConditionalGeneration", "Qwen2_5OmniModel",
    "Qwen2_5_VLForConditionalGeneration", "Qwen3ASRForConditionalGeneration",
    "Qwen3ASRForcedAlignerForTokenClassification", "Qwen3ASRRealtimeGeneration",
    "Qwen3DSparkModel", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "Qwen3NextForCausalLM",
    "Qwen3NextMTP", "Qwen3OmniDSparkModel", "Qwen3OmniMoeForConditionalGeneration",
    "Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration",
    "Qwen3VLNemotronEmbedModel", "Qwen3XPressModel", "Qwen3_5ForCausalLM",
    "Qwen3_5ForConditionalGeneration", "Qwen3_5MTP", "Qwen3_5MoeForCausalLM",
    "Qwen3_5MoeForConditionalGeneration", "Qwen3_5MoeMTP", "Qwen4ExpForCausalLM",
    "Qwen4ExpForConditionalGeneration", "Qwen4ExpMTP", "RForConditionalGeneration",
    "RadioMBartPrefixForCausalLM", "Rnj1ForCausalLM", "RobertaForMaskedLM",
    "RobertaForSequenceClassification", "RobertaForTokenClassification", "RobertaModel",
    "SarvamMLAForCausalLM", "SarvamMoEForCausalLM", "SeedOssForCausalLM", "SiglipModel",
    "SkyworkR1VChatModel", "SmolLM3ForCausalLM", "SmolVLMForConditionalGeneration",
    "SolarForCausalLM", "StableLmForCausalLM", "Starcoder2ForCausalLM", "Step1ForCausalLM",
    "Step3TextForCausalLM", "Step3VLForConditionalGeneration", "Step3p5ForCausalLM", "Step3p5MTP",
    "Step3p7ForConditionalGeneration", "Step5ForCausalLM", "Step5ForConditionalGeneration",
    "Step5MTP", "StepVLForConditionalGeneration", "TeleChat2ForCausalLM", "TeleChat3ForCausalLM",
    "TeleFLMForCausalLM", "Terratorch", "TransformersEmbeddingModel", "TransformersForCausalLM",
    "TransformersForMTP", "TransformersForSequenceClassification", "TransformersMoEEmbeddingModel",
    "TransformersMoEForCausalLM", "TransformersMoEForMTP",
    "TransformersMoEForSequenceClassification", "TransformersMultiModalEmbeddingModel",
    "TransformersMultiModalForCausalLM", "TransformersMultiModalForSequenceClassification",
    "TransformersMultiModalMoEForCausalLM", "UltravoxModel", "UnlimitedOCRForCausalLM",
    "VaultGemmaForCausalLM", "VibeVoiceAsrForConditionalGeneration",
    "VoxtralForConditionalGeneration", "VoxtralRealtimeGeneration",
    "VoyageQwen3BidirectionalEmbedModel", "WhisperForConditionalGeneration",
    "XLMRobertaForSequenceClassification", "XLMRobertaForTokenClassification", "XLMRobertaModel",
    "Zamba2ForCausalLM"
})


def unregistered(architectures: object) -> bool:
    """Whether a config's ``architectures`` names first a class vLLM 0.33's registry lacks."""
    return (isinstance(architectures, list) and bool(architectures)
            and isinstance(architectures[0], str) and architectures[0] not in REGISTRY)


def unregistered_note(architecture: str) -> str | None:
    """The warning for a config whose first ``architectures`` entry vLLM 0.33's registry lacks
    (None for a registered one, or a config naming none)."""
    if not architecture or architecture in REGISTRY:
        return None
    return (f"architecture {architecture!r} is not in vLLM 0.33's model registry: vLLM serves "
            "it only through its Transformers backend (the class in transformers or the "
            "checkpoint's remote code), so it is read as that backend builds it, plain "
            "attention from the config's heads; check the name")
