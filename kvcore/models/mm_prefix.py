"""vLLM 0.33's start-up refusal of a multimodal model that prefills each image whole, where
one image does not fit a step's token budget.

Gemma 3 and PaliGemma attend bidirectionally over an image's tokens
(`ModelConfig.is_mm_prefix_lm`: the config's ``is_mm_prefix_lm`` key, else its model_type
among gemma3, paligemma and three classes kvcli counts no tower for), so vLLM's CUDA platform
forces ``--disable-chunked-mm-input``, and `compute_mm_encoder_budget`
(v1/core/encoder_cache_manager.py) raises when the largest item's tokens exceed
``--max-num-batched-tokens``: before the engine starts, decided from the configs alone.
Not where every limit is 0 or with ``--language-model-only``: vLLM then serves the model
text-only, builds no encoder budget and forces nothing (recorded in tests/data/mm_startup/).

An image's tokens: Gemma 3's ``mm_tokens_per_image`` (without pan-and-scan, which kvcli has no
option for), PaliGemma's SigLIP grid, (image_size / patch_size)^2. Every other class's encoder
budget grows to its largest item (``max(max_num_batched_tokens, item)``): no refusal, no
warning, nothing kvcli's KV cache or scheduler sees.
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError

_PREFIX_TYPES = ("gemma3", "paligemma")     # (of vLLM's MM_PREFIX_LM_MODELS, kvcli's towers)
_GEMMA3_TOKENS = 256                        # Gemma3Config's mm_tokens_per_image
# PaliGemmaConfig's vision_config when absent; SiglipVisionConfig's keys when it is given
_PALIGEMMA_ABSENT = (224, 14)
_SIGLIP = (224, 16)


def atomic_item_tokens(cfg: dict[str, Any]) -> int:
    """The tokens of the largest image a class vLLM prefills whole takes (0: another class)."""
    model_type = cfg.get("model_type")
    if model_type not in _PREFIX_TYPES or cfg.get("is_mm_prefix_lm", True) is False:
        return 0
    if model_type == "gemma3":
        tokens = cfg.get("mm_tokens_per_image", _GEMMA3_TOKENS)
        return tokens if isinstance(tokens, int) and tokens > 0 else 0
    vision = cfg.get("vision_config")
    size, patch = _PALIGEMMA_ABSENT if not isinstance(vision, dict) else (
        vision.get("image_size", _SIGLIP[0]), vision.get("patch_size", _SIGLIP[1]))
    if not all(isinstance(v, int) and v > 0 for v in (size, patch)):
        return 0        # (refused by the tower's own reading)
    return (size // patch) ** 2


def check_atomic_item(tokens: int, images_served: bool, max_num_batched_tokens: int) -> None:
    """vLLM's refusal where one image does not fit the step (``tokens`` from
    `atomic_item_tokens`; ``images_served``: the image limit is not 0)."""
    if not tokens or not images_served or tokens <= max_num_batched_tokens:
        return
    raise InputError(
        "vLLM refuses to start: Chunked MM input disabled but max_tokens_per_mm_item "
        f"({tokens}) is larger than max_num_batched_tokens ({max_num_batched_tokens}). Please "
        "increase max_num_batched_tokens. (This class prefills an image whole: vLLM forces "
        "--disable-chunked-mm-input; an image limit of 0 or --language-model-only serves it "
        "text-only, without the check)", field="max_num_batched_tokens")
