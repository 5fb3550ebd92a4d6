"""Voxtral (`VoxtralForConditionalGeneration`, voxtral.py) from a Hugging Face config.json, as
vLLM 0.33 reads it: its ``audio_config`` (transformers' VoxtralEncoderConfig) has no
``downsample_factor``, which the class reads before it builds anything, so vLLM refuses every
such config, whatever the TP size or multimodal options (recorded:
tests/data/weights_census/mm_audio/). vLLM serves the Voxtral checkpoints from their mistral
``params.json`` (``--config-format mistral``), which kvcli does not read. An audio_config
that gives the key is built by vLLM; its Whisper encoder and adapter are not counted (the
uncounted-tower warning stays)."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError
from kvcore.models.vision_keys import VisionParams, tower_config


def voxtral_params(cfg: dict[str, Any], source: str) -> VisionParams:
    if tower_config(cfg, "audio_config", source).get("downsample_factor") is None:
        raise InputError("'VoxtralEncoderConfig' object has no attribute 'downsample_factor': "
                         "vLLM cannot build VoxtralForConditionalGeneration from a Hugging Face "
                         "config.json (it serves Voxtral from the checkpoint's mistral "
                         "params.json, --config-format mistral, which kvcli does not read)",
                         path=source or None, field="audio_config.downsample_factor")
    return VisionParams(0, 0)
