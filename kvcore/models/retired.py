"""Architectures vLLM 0.33 no longer serves: its registry's `_PREVIOUSLY_SUPPORTED_MODELS`
(model_executor/models/registry.py:841-895), each with the last version that served it. vLLM
refuses such a checkpoint by name at start-up, so kvcli refuses its config.json too instead of
sizing a cache no vLLM 0.33 builds (MiniMax-Text-01's linear attention, Phi-4-mini-flash's
SambaY layers and Mllama's cross-attention were among them)."""

from __future__ import annotations

RETIRED = {
    "MotifForCausalLM": "0.10.2", "Phi3SmallForCausalLM": "0.9.2",
    "Phi4FlashForCausalLM": "0.10.2", "Phi4MultimodalForCausalLM": "0.12.0",
    "JAISLMHeadModel": "0.22.0", "ErnieModel": "0.23.0",
    "InternLM2VEForCausalLM": "0.23.0", "QWenLMHeadModel": "0.23.0",
    "QwenVLForConditionalGeneration": "0.23.0", "InternLMForCausalLM": "0.23.0",
    "DonutForConditionalGeneration": "0.10.2", "MllamaForConditionalGeneration": "0.10.2",
    "XverseForCausalLM": "0.23.0", "Dots1ForCausalLM": "0.23.0", "BambaForCausalLM": "0.23.0",
    "MiniMaxForCausalLM": "0.23.0", "MiniMaxText01ForCausalLM": "0.23.0",
    "MiniMaxM1ForCausalLM": "0.23.0", "MiniMaxVL01ForConditionalGeneration": "0.23.0",
    "BaiChuanForCausalLM": "0.23.0", "BaichuanForCausalLM": "0.23.0",
    "AquilaModel": "0.24.0", "AquilaForCausalLM": "0.24.0", "Grok1ModelForCausalLM": "0.24.0",
    "Grok1ForCausalLM": "0.24.0", "TarsierForConditionalGeneration": "0.24.0",
    "Tarsier2ForConditionalGeneration": "0.23.0", "MantisForConditionalGeneration": "0.24.0",
    "MusicFlamingoForConditionalGeneration": "0.24.0",
    "AyaVisionForConditionalGeneration": "0.24.0", "TeleChatForCausalLM": "0.25.0",
    "PersimmonForCausalLM": "0.25.0", "FuyuForCausalLM": "0.25.0",
    "Plamo2ForCausalLM": "0.26.0", "OuroForCausalLM": "0.26.0",
    "ArcticForCausalLM": "0.28.0", "ChameleonForConditionalGeneration": "0.28.0",
    "Cheers": "0.28.0", "CheersForConditionalGeneration": "0.28.0",
    "Fairseq2LlamaForCausalLM": "0.28.0", "FireRedLIDForConditionalGeneration": "0.28.0",
    "GritLM": "0.28.0", "HCXVisionForCausalLM": "0.28.0", "MPTForCausalLM": "0.28.0",
    "MptForCausalLM": "0.28.0", "RWForCausalLM": "0.28.0",
    "StableLMEpochForCausalLM": "0.28.0",
}
