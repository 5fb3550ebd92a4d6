"""vLLM 0.33's start-up refusal of a multimodal model that prefills each item whole, where
its largest item does not fit a step's token budget.

Gemma 3, PaliGemma and Gemma 4 with ``use_bidirectional_attention`` "vision" attend both ways
over an item's tokens (`ModelConfig.is_mm_prefix_lm`: for the first two the config's
``is_mm_prefix_lm`` key, else its model_type among gemma3, paligemma and three classes kvcli
counts no tower for), so vLLM's CUDA platform forces ``--disable-chunked-mm-input``, and
`compute_mm_encoder_budget` (v1/core/encoder_cache_manager.py) raises when the largest item of
the modalities served (limit above 0) exceeds ``--max-num-batched-tokens``: before the engine
starts, decided from the configs alone. Not where every limit is 0 or with
``--language-model-only``: vLLM then serves the model text-only, builds no encoder budget and
forces nothing (recorded in tests/data/mm_startup/).

An item's tokens (vLLM's processing info): Gemma 3's ``mm_tokens_per_image`` (without
pan-and-scan, which kvcli has no option for); PaliGemma's SigLIP grid, (image_size /
patch_size)^2; Gemma 4's image ``vision_config.default_output_length``, its video 32 frames
(or the video's ``num_frames``, if fewer) of 70 + 8 tokens, its audio the processor's
``audio_seq_length``, 750 by default (kvcli reads no processor_config.json). Every other class's
encoder budget grows to its largest item, ``max(max_num_batched_tokens, item)``: no refusal, no
warning, nothing kvcli's KV cache or scheduler sees.
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError
from kvcore.mm_options import MMOptions

_PREFIX_TYPES = ("gemma3", "paligemma")     # (of vLLM's MM_PREFIX_LM_MODELS, kvcli's towers)
_GEMMA3_TOKENS = 256                        # Gemma3Config's mm_tokens_per_image
# PaliGemmaConfig's vision_config when absent; SiglipVisionConfig's keys when it is given
_PALIGEMMA_ABSENT = (224, 14)
_SIGLIP = (224, 16)
# gemma4_mm.py: a video's frames, each 70 soft tokens + begin/end + ~6 timestamp tokens
_VIDEO_FRAMES, _FRAME_TOKENS = 32, 70 + 2 + 6
_AUDIO_TOKENS = 750                         # Gemma4Processor's audio_seq_length default


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _gemma4_items(cfg: dict[str, Any]) -> tuple[tuple[str, int], ...]:
    text = cfg.get("text_config")
    if not isinstance(text, dict) or text.get("use_bidirectional_attention") != "vision":
        return ()
    vision = cfg.get("vision_config")
    image = vision.get("default_output_length") if isinstance(vision, dict) else None
    # (without default_output_length vLLM's processing info fails: no image counted here)
    items: tuple[tuple[str, int], ...] = ()
    if isinstance(image, int) and _positive(image):
        items = (("image", image),)
    items += (("video", _VIDEO_FRAMES * _FRAME_TOKENS),)
    return items + ((("audio", _AUDIO_TOKENS),) if cfg.get("audio_config") is not None else ())


def atomic_items(cfg: dict[str, Any]) -> tuple[tuple[str, int], ...]:
    """Each modality's largest item's tokens, for a class vLLM prefills whole (else ())."""
    model_type = cfg.get("model_type")
    if model_type == "gemma4":
        return _gemma4_items(cfg)
    if model_type not in _PREFIX_TYPES or cfg.get("is_mm_prefix_lm", True) is False:
        return ()
    if model_type == "gemma3":
        tokens = cfg.get("mm_tokens_per_image", _GEMMA3_TOKENS)
        return (("image", tokens),) if _positive(tokens) else ()
    vision = cfg.get("vision_config")
    size, patch = _PALIGEMMA_ABSENT if not isinstance(vision, dict) else (
        vision.get("image_size", _SIGLIP[0]), vision.get("patch_size", _SIGLIP[1]))
    if not (_positive(size) and _positive(patch)):
        return ()       # (refused by the tower's own reading)
    return (("image", (size // patch) ** 2),)


def served_tokens(items: tuple[tuple[str, int], ...], opts: MMOptions) -> int:
    """The largest item of the modalities served under `opts` (0: none served)."""
    def tokens(modality: str, n: int) -> int:
        if modality == "video" and opts.video_frames is not None:
            return min(_VIDEO_FRAMES, opts.video_frames) * _FRAME_TOKENS
        return n
    return max((tokens(m, n) for m, n in items if opts.limit(m) > 0), default=0)


def check_atomic_item(items: tuple[tuple[str, int], ...], opts: MMOptions | None,
                      max_num_batched_tokens: int) -> None:
    """vLLM's refusal where the largest item served does not fit the step (``items`` from
    `atomic_items`)."""
    tokens = served_tokens(items, opts or MMOptions())
    if tokens <= max_num_batched_tokens:
        return
    raise InputError(
        "vLLM refuses to start: Chunked MM input disabled but max_tokens_per_mm_item "
        f"({tokens}) is larger than max_num_batched_tokens ({max_num_batched_tokens}). Please "
        "increase max_num_batched_tokens. (This class prefills an item whole: vLLM forces "
        "--disable-chunked-mm-input; a limit of 0 or --language-model-only serves it "
        "text-only, without the check)", field="max_num_batched_tokens")
