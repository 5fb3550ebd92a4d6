"""Unlimited-OCR (`UnlimitedOCRForCausalLM`, unlimited_ocr.py) as vLLM 0.33 builds it.

vLLM's `UnlimitedOCRConfig` (model_type ``unlimited-ocr``) is a `DeepseekVLV2Config` with
``rswa_window``; the class is DeepSeek-OCR's (`DeepseekOCRForCausalLM`) whole: its DeepEncoder
tower and projector (`kvcore.models.deepseek_ocr_tower`) and a DeepSeek-V2 MoE language model
from ``language_config`` (`kvcore.models.deepseek_vl2.language_as_text`), plain multi-head
attention where its ``qk_nope_head_dim`` and ``qk_rope_head_dim`` are 0 (``deepseek``).
What is its own (vllm/model_executor/models/config.py, `UnlimitedOCRForCausalLMConfig`):

* ``rswa_window`` (128 where missing or null) is copied onto the text config, and each
  `DeepseekAttention` then builds an `RSWAAttention`: an `RSWASpec` a layer (full attention's
  page, sized as full attention), whose manager frees the blocks between the prompt and the
  last ``rswa_window`` computed tokens (`kvcore.managers.rswa`).
* Prefix caching is turned off whatever is asked (R-SWA's decode KV is not a function of the
  prefix alone).
* The attention backend: FLASH_ATTN with FA4 where FA4 is available (an H100), else
  TRITON_ATTN; both at block 16 for its heads (FA4's larger blocks are for fp8 KV on SM90 or
  256-wide heads).
The MLA path (DeepseekV2MLAAttention) never reads ``rswa_window``: such a language model is
refused here, unrecorded.
Checked against vLLM's class on the meta device (tests/data/refused_lifted/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped

UNLIMITED_OCR = "UnlimitedOCRForCausalLM"
# UnlimitedOCRConfig's default (and verify_and_update_model_config's where it is null)
DEFAULT_RSWA_WINDOW = 128


def with_window(cfg: dict[str, Any], text: dict[str, Any], source: str) -> dict[str, Any]:
    """The text config `text` of an Unlimited-OCR config `cfg` with its ``rswa_window``, as
    vLLM copies it there (the language model's own key overwritten)."""
    if cfg.get("architectures", [None])[0] != UNLIMITED_OCR:
        return text
    if text.get("model_type") != "deepseek":
        # (only DeepseekAttention reads the window: an MLA language model's caches would be
        # MLA's, a combination no recording here covers)
        raise InputError("kvcli sizes Unlimited-OCR's plain-attention language model only "
                         "(qk_nope_head_dim and qk_rope_head_dim 0); an MLA one is not "
                         "recorded against vLLM", path=source or None,
                         field="language_config.qk_rope_head_dim")
    w = cfg.get("rswa_window")
    w = DEFAULT_RSWA_WINDOW if w is None else w
    if not isinstance(w, int) or isinstance(w, bool) or not 1 <= w < 2**31:
        raise InputError(f"expected an integer >= 1, got {clipped(w)}", path=source or None,
                         field="rswa_window")
    return {**text, "rswa_window": w}


def rswa_window(c: dict[str, Any]) -> int:
    """The window `with_window` wrote on text config `c` (0: not Unlimited-OCR's)."""
    w = c.get("rswa_window")
    return w if isinstance(w, int) and not isinstance(w, bool) else 0


def caching_forced_off(architecture: str) -> bool:
    """Whether vLLM turns prefix caching off for the class whatever is asked."""
    return architecture == UNLIMITED_OCR


def caching_note(name: str) -> str:
    """The warning when prefix caching is asked of Unlimited-OCR."""
    return (f"{name}: vLLM 0.33 turns prefix caching off for UnlimitedOCRForCausalLM whatever "
            "is asked (UnlimitedOCRForCausalLMConfig: R-SWA's decode KV is not a function of "
            "the prefix); sized and replayed with it off")
