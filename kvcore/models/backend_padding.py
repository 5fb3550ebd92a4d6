"""The Transformers backend's one refusal of a vocabulary: its classes are transformers' own
modules, whose embedding is ``nn.Embedding(vocab_size, hidden_size, pad_token_id)``, built
before vLLM swaps in its own; torch asserts the padding index is a row ("Padding_idx must be
within num_embeddings"). Found by tests/data/size_fuzz (a vocabulary drawn below the id)."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped

# the text classes vLLM 0.33 serves on the Transformers backend whose transformers 5.20.2
# modeling file builds that embedding (registry.py's "transformers" rows; GPT-BigCode's and
# GPT-NeoX's build theirs without a padding index, VaultGemma's takes none)
PADDED_EMBEDDING = frozenset({
    "ArceeForCausalLM", "CwmForCausalLM", "FlexOlmoForCausalLM", "GlmForCausalLM",
    "HunYuanDenseV1ForCausalLM", "HunYuanMoEV1ForCausalLM", "Jais2ForCausalLM",
    "Kolibri1ForCausalLM", "MellumForCausalLM", "OlmoForCausalLM", "Olmo2ForCausalLM",
    "Olmo3ForCausalLM", "PhiForCausalLM", "SeedOssForCausalLM", "SmolLM3ForCausalLM",
    "Starcoder2ForCausalLM"})


def refuse_padding_idx(cfg: dict[str, Any], text: dict[str, Any], source: str) -> None:
    """Raise torch's refusal where the class's pad_token_id is no row of its embedding."""
    archs = cfg.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs else None
    pad, vocab = text.get("pad_token_id"), text.get("vocab_size")
    if (arch in PADDED_EMBEDDING and isinstance(pad, int) and isinstance(vocab, int)
            and not -vocab <= pad < vocab):
        raise InputError(f"{clipped(pad)} is no row of the {vocab:,}-token embedding, and vLLM "
                         "refuses to build it (its Transformers backend's nn.Embedding: "
                         "'Padding_idx must be within num_embeddings')", path=source or None,
                         field="pad_token_id")
