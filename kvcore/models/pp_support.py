"""The architectures vLLM 0.33 builds without pipeline parallelism: their model class does not
implement `SupportsPP`, so ``ModelConfig.verify_with_parallel_config`` refuses a
``--pipeline-parallel-size`` above 1 before any worker starts.

The set is the registry's own answer (2026-12-07): every architecture of
``vllm.model_executor.models.registry.ModelRegistry.models`` imported in vLLM 0.33.0's
environment and asked ``interfaces.supports_pp(cls)``: 415 architectures, 195 supporting it,
these 102 not, 118 not importable on this CPU (torchvision, torchaudio and such missing;
kvcli refuses most of those by name: `kvcore.models.unsupported`). It holds classes kvcli never
reads (encoders, drafts) too, as vLLM's registry lists them; only a target's first
``architectures`` entry is looked up.
"""

from __future__ import annotations

from kvcore.errors import InputError

NO_PP = frozenset({
    "AriaForConditionalGeneration", "BailingMoeV25MTPModel", "BertForMaskedLM",
    "BertForSequenceClassification", "BertForTokenClassification", "BertModel",
    "BertSpladeSparseEmbeddingModel", "BgeM3EmbeddingModel", "CLIPModel",
    "ColBERTJinaRobertaModel", "ColBERTLfm2Model", "ColBERTModernBertModel",
    "ColModernVBertForRetrieval", "DFlash2BeamDraftModel", "DFlash2DraftModel",
    "DFlashDraftModel", "DFlashLagunaForCausalLM", "DFlashMuseGlimmerAssistantModel",
    "DFlashQwen3XPressModel", "DSparkDraftModel", "DSparkV41DraftModel", "DeepSeekV4MTPModel",
    "DomynEdgeForCausalLM", "DoryForCausalLM", "Eagle3DeepseekV2ForCausalLM",
    "Eagle3DeepseekV3ForCausalLM", "Eagle3LlamaForCausalLM", "Eagle3MiniMaxM2ForCausalLM",
    "Eagle3Qwen2_5vlForCausalLM", "Eagle3Qwen3ForCausalLM", "Eagle3Qwen3vlForCausalLM",
    "EagleCohereForCausalLM", "EagleDeepSeekMTPModel", "EagleLlama4ForCausalLM",
    "EagleLlamaForCausalLM", "EagleMiniCPMForCausalLM", "EagleMistralForCausalLM",
    "EagleMistralLarge3ForCausalLM", "ErnieMTPModel", "Exaone4_5_MTP", "ExaoneMoeMTP",
    "ExtractHiddenStatesModel", "FireRedASR2ForConditionalGeneration",
    "GPT2ForSequenceClassification", "Gemma3TextModel", "Gemma3nForCausalLM",
    "Gemma3nForConditionalGeneration", "Gemma4DSparkModel", "Gemma4MTPModel",
    "Glm4MoeMTPModel", "GteModel", "GteNewForSequenceClassification", "GteNewModel",
    "HF_ColBERT", "HYV3MTPModel", "HYV4MTPModel", "HrmTextForCausalLM",
    "IQuestLoopCoderForCausalLM", "Idefics3ForConditionalGeneration", "InklingMTPModel",
    "JinaForRanking", "Lfm2BidirectionalModel", "LiLiCorrDraftModel", "LlamaForCausalLMEagle3",
    "LongCatFlashMTPModel", "Mamba2ForCausalLM", "MiMoMTPModel", "MiMoV2MTPModel",
    "MiMoV2OmniMTPModel", "ModernBertForSequenceClassification",
    "ModernBertForTokenClassification", "ModernBertModel", "ModernVBertModel",
    "MuseGlimmerAssistantModel", "MuseSparkDSparkModel",
    "NemotronParseForConditionalGeneration", "NomicBertModel",
    "OpenAIPrivacyFilterForTokenClassification", "OpenPanguMTPModel", "PEagleDraftModel",
    "PaddleOCRVLForConditionalGeneration", "ParseAuxMTPModel", "PeagleLlamaForCausalLM",
    "PeagleQwen3ForCausalLM", "Phi4MMForCausalLM", "Qwen3DSparkModel", "Qwen3OmniDSparkModel",
    "Qwen3XPressModel", "RadioMBartPrefixForCausalLM", "RobertaForMaskedLM",
    "RobertaForSequenceClassification", "RobertaForTokenClassification", "RobertaModel",
    "SiglipModel", "SmolVLMForConditionalGeneration", "Step3p5MTP",
    "VoyageQwen3BidirectionalEmbedModel", "WhisperForConditionalGeneration",
    "XLMRobertaForSequenceClassification", "XLMRobertaForTokenClassification",
    "XLMRobertaModel", "Zamba2ForCausalLM"
})

WORDS = ("Pipeline parallelism is not supported for this model. Supported models implement the "
         "`SupportsPP` interface.")


def refuse_pp(name: str, architecture: str, pp: int) -> None:
    """vLLM's refusal of ``pp`` stages for a model of `architecture` (none: return)."""
    if pp > 1 and architecture in NO_PP:
        raise InputError(f"{name} ({architecture}) cannot be split into stages, and vLLM "
                         f"refuses it: \"{WORDS}\"; got {pp}", field="pipeline_parallel_size")
