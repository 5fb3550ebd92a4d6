"""vLLM 0.33's multimodal serving options as `vllm serve` takes them (config/multimodal.py
`MultiModalConfig`): ``--limit-mm-per-prompt`` (a JSON object, each modality a count or
``{"count": N, ...}``; an unnamed modality 999), ``--language-model-only`` (every limit 0) and
``--mm-encoder-tp-mode`` (weights | data), read and checked here, below the models; what they
change in the weights a rank holds: `kvcore.models.mm_serving`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kvcore.errors import InputError, clipped

MM_ENCODER_TP_MODES = ("weights", "data")       # vLLM's MMEncoderTPMode
DEFAULT_LIMIT = 999                             # an unnamed modality's (get_limit_per_prompt)
# the keys each modality's options take beside its count (vLLM's *DummyOptions classes; other
# modalities take only count)
_EXTRA_KEYS = {"image": ("width", "height"), "video": ("num_frames", "width", "height"),
               "audio": ("length",)}
_FIELD = "limit_mm_per_prompt"


@dataclass(frozen=True, slots=True)
class MMOptions:
    """The options as given: each named modality's limit, every limit 0, the encoder's mode."""
    limits: tuple[tuple[str, int], ...] = ()
    language_model_only: bool = False
    mm_encoder_tp_mode: str = "weights"
    # the video's ``num_frames`` (None: not given), which caps Gemma 4's largest video
    # (`kvcore.models.mm_prefix`)
    video_frames: int | None = None

    def limit(self, modality: str) -> int:
        """vLLM's `get_limit_per_prompt`."""
        if self.language_model_only:
            return 0
        return dict(self.limits).get(modality, DEFAULT_LIMIT)

    @property
    def given(self) -> bool:
        return self != MMOptions()

    @property
    def given_fields(self) -> tuple[str, ...]:
        """The options given other than their defaults, by field."""
        return tuple(k for k, on in (("limit_mm_per_prompt", bool(self.limits)),
                                     ("language_model_only", self.language_model_only),
                                     ("mm_encoder_tp_mode", self.mm_encoder_tp_mode != "weights"))
                     if on)


def _count(modality: str, value: Any) -> int:
    if isinstance(value, dict):
        extra = [k for k in value if k != "count" and k not in _EXTRA_KEYS.get(modality, ())]
        if extra:
            raise InputError(f"{modality}: unexpected key {clipped(extra[0])} (vLLM takes "
                             f"count{''.join(', ' + k for k in _EXTRA_KEYS.get(modality, ()))})",
                             field=_FIELD)
        for k in _EXTRA_KEYS.get(modality, ()):
            v = value.get(k)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v <= 0):
                raise InputError(f"{modality}.{k}: expected an integer > 0, got {clipped(v)}",
                                 field=_FIELD)
        value = value.get("count", DEFAULT_LIMIT)
    elif not isinstance(value, int):
        raise InputError(f"{modality}: expected a count or an object with 'count', got "
                         f"{clipped(value)}", field=_FIELD)
    # (vLLM's pydantic reads true as 1)
    if not isinstance(value, int) or value < 0:
        raise InputError(f"{modality}: expected a count >= 0, got {clipped(value)}",
                         field=_FIELD)
    return int(value)


def parse_limits(text: str | None) -> tuple[tuple[str, int], ...]:
    """``--limit-mm-per-prompt``'s JSON object, as vLLM reads it: each modality a count or
    ``{"count": N, ...}`` (its dummy-data sizes, checked and not used here)."""
    if text is None:
        return ()
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        raise InputError(f"expected a JSON object like '{{\"image\": 0}}' (or the dotted "
                         f"--limit-mm-per-prompt.image 0), got {clipped(text)}",
                         field=_FIELD) from None
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object like '{{\"image\": 0}}', got {clipped(obj)}",
                         field=_FIELD)
    return tuple((str(k), _count(str(k), v)) for k, v in obj.items())


def mm_options(limit_mm_per_prompt: str | None = None, language_model_only: bool = False,
               mm_encoder_tp_mode: str | None = None) -> MMOptions:
    mode = "weights" if mm_encoder_tp_mode is None else mm_encoder_tp_mode
    if mode not in MM_ENCODER_TP_MODES:
        raise InputError(f"expected one of {', '.join(MM_ENCODER_TP_MODES)}, got "
                         f"{clipped(mode)}", field="mm_encoder_tp_mode")
    limits = parse_limits(limit_mm_per_prompt)
    video = (json.loads(limit_mm_per_prompt).get("video")
             if limits and limit_mm_per_prompt is not None else None)
    frames = video.get("num_frames") if isinstance(video, dict) else None
    return MMOptions(limits, bool(language_model_only), mode, frames)
