"""The pooling classes of vLLM 0.33's registry whose layers all attend bidirectionally: their
attention is `EncoderOnlyAttention` (layers/attention/encoder_only_attention.py), whose
``get_kv_cache_spec`` returns None, so vLLM keeps no KV cache for them at all. Read as a
decoder, kvcli would size a pool vLLM never allocates: refused by name
(`kvcore.models.unsupported`).

From each class's model file (2026-12-07): BERT and RoBERTa (bert.py, roberta.py), ModernBERT,
GTE and Nomic-BERT (bert_with_rope.py), the ColBERT heads over them (colbert.py), CLIP's and
SigLIP's embedder (siglip.py), the bidirectional Llama and DeepSeek-V3 embedders (``is_causal``
false: models/config.py's LlamaBidirectionalConfig, deepseek_v2.py) and EmbeddingGemma2
(ENCODER_ONLY). Decoders served for pooling (LlamaModel, Qwen2Model, Gemma2Model, the reward
models, CLIP's text model: a causal `Attention`) keep their KV cache and are read as decoders,
unless their config says ``is_causal`` false (`is_causal_refusal`).
"""

from __future__ import annotations

import json
from typing import Any

from kvcore.errors import InputError

# The model types whose vLLM decoder layer reads ``is_causal`` ("You can override the HF config
# with `is_causal=False` to enable bidirectional attention": llama.py, whose layers Mistral's
# subclass, qwen2.py, qwen3.py, gemma3.py, apertus.py; qwen3_next.py its full-attention
# layers): a false one builds them as EncoderOnlyAttention, which keeps no KV cache.
# (DeepSeek's MLA is refused for it by `kvcore.models.mla`; the other decoders ignore the key.)
READS_IS_CAUSAL = ("llama", "mistral", "qwen2", "qwen3", "gemma3_text", "apertus", "qwen3_next")

ENCODER_ONLY = frozenset({
    "BertModel", "BertForMaskedLM", "BertSpladeSparseEmbeddingModel",
    "BertForSequenceClassification", "BertForTokenClassification", "BgeM3EmbeddingModel",
    "RobertaModel", "RobertaForMaskedLM", "RobertaForSequenceClassification",
    "RobertaForTokenClassification", "XLMRobertaModel", "XLMRobertaForSequenceClassification",
    "XLMRobertaForTokenClassification", "ModernBertModel",
    "ModernBertForSequenceClassification", "ModernBertForTokenClassification", "GteModel",
    "GteNewModel", "GteNewForSequenceClassification", "NomicBertModel", "HF_ColBERT",
    "ColBERTModernBertModel", "ColBERTJinaRobertaModel", "SiglipModel",
    "LlamaBidirectionalModel", "LlamaBidirectionalForSequenceClassification",
    "DeepseekV3BidirectionalModel", "EmbeddingGemma2Model",
})


def is_causal_refusal(c: dict[str, Any], model_type: str, source: str) -> None:
    """Refuse the text config `c` of `model_type` when vLLM builds its attention bidirectional
    (``is_causal`` present and falsy, as ``getattr(config, "is_causal", True)`` reads it)."""
    if model_type in READS_IS_CAUSAL and "is_causal" in c and not c["is_causal"]:
        raise InputError(f"{json.dumps(c['is_causal'])}: vLLM 0.33 builds {model_type}'s "
                         "attention layers bidirectional (encoder-only) then, which keep no KV "
                         "cache at all; kvcli does not model that (sizing them as a decoder's "
                         "would not be vLLM's cache)", path=source or None, field="is_causal")
