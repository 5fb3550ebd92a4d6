"""Architectures vLLM 0.33 serves with a recurrent or linear-attention state kvcli does not
model: their config.json is refused by name, since read as plain attention it would size a
cache vLLM never allocates (a quiet lie).

Each maps to what its layers keep in vLLM (model_executor/models/<file>.py).
"""

from __future__ import annotations

NOT_MODELLED = {
    "MambaForCausalLM": "Mamba-1 layers only (attention-free)",
    "FalconMambaForCausalLM": "Mamba-1 layers only (attention-free)",
    "Mamba2ForCausalLM": "Mamba2 layers only (attention-free)",
    "Zamba2ForCausalLM": "Mamba2 layers with shared attention blocks",
    "Lfm2ForCausalLM": "short-convolution layers beside attention",
    "Lfm2MoeForCausalLM": "short-convolution layers beside attention",
    "BailingMoeV2_5ForCausalLM": "linear-attention layers",
    "BailingMoeV3ForCausalLM": "Gated DeltaNet layers",
    "OlmoHybridForCausalLM": "linear-attention layers",
    "AliceAIForCausalLM": "linear-attention layers",
    "KimiLinearForCausalLM": "Kimi Delta Attention layers beside MLA",
}


def not_modelled(architectures: object) -> str | None:
    """The reason a config's architecture is refused, or None."""
    if isinstance(architectures, list) and architectures:
        return NOT_MODELLED.get(str(architectures[0]))
    return None
