"""What transformers 5.20's config classes (vLLM 0.33.0's environment) give a key a
config.json leaves out, for the keys the KV geometry and perf.py read (`getattr` on the
config object sees these class defaults): KV heads, head size and widths a class fixes rather
than derives from hidden_size / num_attention_heads, the vocabulary, the MoE layout.

Recorded 2026-12-05 with the oracle's interpreter: each class built twice (hidden 960 / 8 heads,
1536 / 12 heads) and a key kept where both agree (tests/data/perf_configs/README.md).
`MODEL_TYPE_DEFAULTS` (hand-checked, below) wins over this table.
"""

from __future__ import annotations

from typing import Any

from kvcore.models.dory import DEFAULTS as DORY_DEFAULTS
from kvcore.models.dory import DORY
from kvcore.models.kv_sharing import GEMMA_DEFAULTS
from kvcore.models.llama4 import CHUNK_DEFAULT, NOPE_INTERVAL_DEFAULT
from kvcore.models.mimo_v2 import FLASH_DEFAULTS
from kvcore.models.mla import MLA_DEFAULTS
from kvcore.models.nemotron_h import NEMOTRON_H_DEFAULTS
from kvcore.models.qwen3_5 import QWEN3_5_DEFAULTS, QWEN3_5_MOE_DEFAULTS
from kvcore.models.qwen3_next import QWEN3_NEXT_DEFAULTS
from kvcore.models.sarvam import DEFAULTS as SARVAM_DEFAULTS
from kvcore.models.sarvam import SARVAM_MLA

CLASS_DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {"intermediate_size": 11008, "vocab_size": 32000},
    "mistral": {"num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000},
    "qwen2": {"num_key_value_heads": 32, "intermediate_size": 22016, "vocab_size": 151936},
    # (vLLM's DotsOCRConfig: a Qwen2Config)
    "dots_ocr": {"num_key_value_heads": 32, "intermediate_size": 22016, "vocab_size": 151936},
    "qwen3": {"num_key_value_heads": 32, "head_dim": 128, "intermediate_size": 22016, "vocab_size":
        151936},
    "qwen2_moe": {"num_key_value_heads": 16, "intermediate_size": 5632, "vocab_size": 151936,
        "num_experts": 60, "num_experts_per_tok": 4, "moe_intermediate_size": 1408},
    "qwen3_moe": {"num_key_value_heads": 4, "intermediate_size": 6144, "vocab_size": 151936,
        "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768},
    "mixtral": {"num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000,
        "num_experts": 8, "num_experts_per_tok": 2},
    "phimoe": {"num_key_value_heads": 8, "intermediate_size": 6400, "vocab_size": 32064,
        "num_experts_per_tok": 2},
    "olmoe": {"intermediate_size": 2048, "vocab_size": 50304, "num_experts": 64,
        "num_experts_per_tok": 8},
    "granitemoe": {"intermediate_size": 11008, "vocab_size": 32000, "num_experts_per_tok": 2},
    "gemma2": {"num_key_value_heads": 4, "head_dim": 256, "intermediate_size": 9216, "vocab_size":
        256000},
    "gemma3_text": {"num_key_value_heads": 4, "head_dim": 256, "intermediate_size": 9216,
        "vocab_size": 262208},
    "cohere2": {"intermediate_size": 22528, "vocab_size": 256000},
    "gpt_oss": {"num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 2880, "vocab_size":
        201088, "num_experts": 128, "num_experts_per_tok": 4},
    "deepseek_v3": {"intermediate_size": 18432, "vocab_size": 129280, "num_experts_per_tok": 8,
        "moe_intermediate_size": 2048, "n_shared_experts": 1, "first_k_dense_replace": 3},
    "deepseek_v2": {"intermediate_size": 11008, "vocab_size": 102400, "num_experts": 64,
        "moe_intermediate_size": 1407, "n_shared_experts": 2, "first_k_dense_replace": 0},
    "glm4_moe": {"num_key_value_heads": 8, "intermediate_size": 10944, "vocab_size": 151552,
        "num_experts_per_tok": 8, "moe_intermediate_size": 1408, "n_shared_experts": 1,
        "first_k_dense_replace": 1},
    "ernie4_5_moe": {"num_key_value_heads": 4, "intermediate_size": 12288, "vocab_size": 103424,
        "num_experts": 64, "num_experts_per_tok": 6, "moe_intermediate_size": 1536,
        "moe_num_shared_experts": 2, "moe_layer_start_index": 1},
    "phi3": {"intermediate_size": 8192, "vocab_size": 32064},
    "exaone4": {"num_key_value_heads": 32, "intermediate_size": 16384, "vocab_size": 102400},
    "falcon": {"vocab_size": 65024, "max_position_embeddings": 2048, "tie_word_embeddings": True},
    "llama4_text": {"num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 8192,
        "vocab_size": 202048, "num_experts_per_tok": 1},
    "starcoder2": {"num_key_value_heads": 2, "intermediate_size": 12288, "vocab_size": 49152},
    # (Lfm2Config's, Lfm2MoeConfig's: read from transformers 5.20's source, 2026-12-07)
    "lfm2": {"intermediate_size": 12288},
    "lfm2_moe": {"intermediate_size": 7168, "moe_intermediate_size": 1792, "num_experts": 32,
                 "num_experts_per_tok": 4},
}

# Defaults of the transformers config classes for keys real checkpoints omit.
MODEL_TYPE_DEFAULTS: dict[str, dict[str, Any]] = {
    "mimo_v2_flash": FLASH_DEFAULTS,
    DORY: DORY_DEFAULTS,    # (vLLM's own DoryConfig)
    "gemma3_text": {"vocab_size": 262208, "sliding_window_pattern": 6, "head_dim": 256,
                    "max_position_embeddings": 131072, "sliding_window": 4096,
                    "tie_word_embeddings": True, "num_key_value_heads": 4},
    "gemma2": {"head_dim": 256, "sliding_window": 4096, "max_position_embeddings": 8192,
               "vocab_size": 256000, "tie_word_embeddings": True},
    # (GemmaConfig's: PaliGemma's text_config leaves these out; its head is its embedding)
    "gemma": {"head_dim": 256, "max_position_embeddings": 8192, "vocab_size": 256000,
              "tie_word_embeddings": True},
    "cohere2": {"sliding_window": 4096, "sliding_window_pattern": 4, "vocab_size": 256000,
                "max_position_embeddings": 8192, "tie_word_embeddings": True},
    "falcon_h1": {"mamba_d_ssm": 1024, "mamba_n_heads": 128, "mamba_d_head": 8,
                  "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_conv": 4,
                  "mamba_expand": 2, "max_position_embeddings": 8192, "vocab_size": 128000},
    "exaone4": {"sliding_window": 4096, "sliding_window_pattern": 4},
    "gpt_oss": {"sliding_window": 128},
    "opt": {"tie_word_embeddings": True},   # (OPTConfig's: opt-6.7b's head is its embedding)
    # (Starcoder2Config's: StarCoder2's checkpoints leave it out and vLLM builds no lm_head;
    # tests/data/gpt_family/starcoder2-*)
    "starcoder2": {"tie_word_embeddings": True},
    "mistral": {"sliding_window": 4096},
    "jamba": {"attn_layer_period": 8, "attn_layer_offset": 4, "expert_layer_period": 2,
              "expert_layer_offset": 1, "mamba_d_state": 16, "mamba_d_conv": 4,
              "mamba_expand": 2, "mamba_dt_rank": "auto", "num_experts": 16},
    **MLA_DEFAULTS,
    **GEMMA_DEFAULTS,
    "nemotron_h": NEMOTRON_H_DEFAULTS,
    SARVAM_MLA: SARVAM_DEFAULTS,     # (sarvam.py's getattr defaults: no config class)
    "qwen3_next": QWEN3_NEXT_DEFAULTS,
    "qwen3_5_text": QWEN3_5_DEFAULTS,
    "qwen3_5_moe_text": QWEN3_5_MOE_DEFAULTS,
    "llama4_text": {"attention_chunk_size": CHUNK_DEFAULT,
                    "no_rope_layer_interval": NOPE_INTERVAL_DEFAULT},
    # (AriaTextConfig's MoE: Aria's text_config, which aria.py builds with FusedMoE)
    "aria_text": {"moe_num_experts": 8, "moe_topk": 2, "moe_num_shared_experts": 2},
}
