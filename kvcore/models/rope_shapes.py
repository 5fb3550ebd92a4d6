"""The RoPE parameters whose lengths vLLM 0.33's rotary embeddings take on trust, refused where
they do not fit the rotary dimension (found by tests/data/size_fuzz: a drawn head_dim left
the published lists behind, and vLLM failed building the model):
* LongRoPE's ``short_factor`` and ``long_factor`` (Phi-3's, Phi-3-vision's): one factor a
  frequency, rotary_dim / 2 of them; Phi3LongRoPEScaledRotaryEmbedding multiplies them into
  its frequencies as it builds each cache (short first), which torch refuses to broadcast;
* MRoPE's ``mrope_section`` (Qwen2-VL's, Keye-VL's, ...): MRotaryEmbedding asserts
  ``sum(self.mrope_section) == rotary_dim // 2`` (mrope.py), under the default and YaRN
  types get_rope builds it for (Isaac's class computes its own section: isaac.py)."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError

OWN_SECTION = ("IsaacForConditionalGeneration",)


def refuse_misfit_rope(rp: dict[str, Any], kind: str, dim: int, key: str, architecture: str,
                       source: str) -> None:
    """Raise vLLM's refusal of a parameter set `rp` (of RoPE type `kind`, the config's key
    `key`) whose lists do not fit a rotary dimension of `dim`; else return."""
    half = dim // 2
    if kind == "longrope":
        for name in ("short_factor", "long_factor"):
            factors = rp.get(name)
            if isinstance(factors, list) and len(factors) != half:
                raise InputError(
                    f"{len(factors)} factors for a rotary dimension of {dim} ({half} "
                    "frequencies): vLLM cannot build its LongRoPE cache (torch: 'Attempting to "
                    f"broadcast a dimension of length {half}', phi3_long_rope_scaled_rope.py)",
                    path=source or None, field=f"{key}.{name}")
    section = rp.get("mrope_section")
    if kind in ("default", "yarn") and architecture not in OWN_SECTION and isinstance(
            section, list) and all(
            type(s) is int for s in section) and sum(section) != half:
        raise InputError(
            f"sums to {sum(section)}, not half the rotary dimension of {dim} ({half}): vLLM "
            "refuses it (mrope.py: 'assert sum(self.mrope_section) == rotary_dim // 2')",
            path=source or None, field=f"{key}.mrope_section")
