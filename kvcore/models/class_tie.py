"""Whether vLLM 0.33's text class ties its LM head to its embedding whatever
``tie_word_embeddings`` says, by the class a config.json's ``architectures`` names (the class
vLLM builds). Found by tests/data/size_fuzz (a flipped flag sized as the flag says); read from
each class's source: a class that builds a ``ParallelLMHead`` and never calls ``tie_weights``
keeps an lm_head of its own, one that computes its logits from ``embed_tokens`` has none."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError

# never tied: an lm_head of their own, the flag unread (deepseek_v2.py:1918, olmoe.py:372,
# phimoe.py:551, glm4_moe_lite.py:583, afmoe.py:513, minimax_m2.py:450, ...). Not here:
# Step3's, Step-3.5's and MiMo-V2's, whose flag keeps the embedding on the last pipeline stage
# too (kvcli's own readers size them), K2-Horizon's (tied by weight where the flag says)
NEVER_TIED = frozenset({
    "AfmoeForCausalLM", "AliceAIForCausalLM", "AXK1ForCausalLM", "BailingMoeV2_5ForCausalLM",
    "BailingMoeV3ForCausalLM", "DeepseekForCausalLM", "DeepseekV2ForCausalLM",
    "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "Glm4MoeForCausalLM",
    "Glm4MoeLiteForCausalLM", "GlmMoeDsaForCausalLM", "GptOssForCausalLM", "JambaForCausalLM",
    "LongcatFlashForCausalLM", "LongcatFlashNgramForCausalLM", "MiniMaxM2ForCausalLM",
    "MistralLarge3ForCausalLM", "MuseGlimmerForCausalLM", "NemotronHForCausalLM",
    "NemotronHPuzzleForCausalLM", "OlmoeForCausalLM", "PhiMoEForCausalLM", "Qwen3NextForCausalLM"})
# (a DeepSeek text config a wrapper builds unnamed: DeepSeek-VL2's and DeepSeek-OCR's
# language_config, init_vllm_registered_model with no architectures, vLLM resolving
# DeepSeek's class by the model_type; Kimi-VL and Kimi-K2.5 name DeepseekV2ForCausalLM)
DEEPSEEK_TYPES, DEEPSEEK_TEXT = ("deepseek_v2", "deepseek_v3"), "DeepseekV2ForCausalLM"
# always tied: lm_head.tie_weights unconditionally (lfm2.py:599, zamba2.py:934) or logits read
# from the embedding, no lm_head (gemma2.py's Gemma2ForCausalLM, gemma3n.py's)
ALWAYS_TIED = frozenset({"Gemma2ForCausalLM", "Gemma3nForCausalLM", "Lfm2ForCausalLM",
                         "Lfm2MoeForCausalLM", "Zamba2ForCausalLM"})
# refuse a tied head as they are built (gpt_j.py:261, beam/nvidia/model.py:386; vLLM's words).
# Found by tests/data/size_fuzz, seed 1
TIE_REFUSED = {"GPTJForCausalLM": "gpt_j.py asserts not config.tie_word_embeddings",
               "BeamForCausalLM": "Beam requires tie_word_embeddings=False.",
               # (DoryConfig.validate, as the class is built: its head is its own)
               "DoryForCausalLM": "Dory requires SiLU and untied embeddings"}


def class_tie(cfg: dict[str, Any], text: dict[str, Any], source: str) -> dict[str, Any]:
    """The text config with the flag its class builds by (`text` unchanged elsewhere); DBRX's
    tied head refused as transformers' DbrxConfig refuses it (its validate_architecture)."""
    archs = cfg.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs else None
    if text.get("model_type") == "dbrx" and text.get("tie_word_embeddings") is True:
        raise InputError("tie_word_embeddings is not supported for DBRX models (transformers' "
                         "DbrxConfig refuses it, so vLLM cannot load the model)",
                         path=source or None, field="tie_word_embeddings")
    if arch in TIE_REFUSED and text.get("tie_word_embeddings") is True:
        raise InputError(f"{arch} cannot tie its LM head: vLLM 0.33 refuses it ("
                         f"{TIE_REFUSED[arch]})", path=source or None, field="tie_word_embeddings")
    if arch not in NEVER_TIED and arch not in ALWAYS_TIED and text is not cfg:
        # (a wrapper builds its language model by the text config's class: Nemotron Nano VL's
        # llm_config names NemotronHForCausalLM, nano_nemotron_vl.py)
        inner = text.get("architectures")
        arch = (inner[0] if isinstance(inner, list) and inner
                else DEEPSEEK_TEXT if text.get("model_type") in DEEPSEEK_TYPES else arch)
    if arch in NEVER_TIED or arch in ALWAYS_TIED:
        return {**text, "tie_word_embeddings": arch in ALWAYS_TIED}
    return text
