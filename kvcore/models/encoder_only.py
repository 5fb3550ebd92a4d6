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
models, CLIP's text model: a causal `Attention`) keep their KV cache and are read as decoders.
"""

from __future__ import annotations

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
