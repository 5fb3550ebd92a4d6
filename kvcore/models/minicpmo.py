"""MiniCPM-o (``MiniCPMO``, model_type minicpmo, remote code) as vLLM 0.33 builds it
(minicpmo.py), per TP rank: MiniCPM-V's class for its ``version`` and, beside it, an audio
tower.

* ``version`` (absent: 2.6): 2.6 builds `MiniCPMV2_6` (Qwen2), 4.5 `MiniCPMV4_5` (Qwen3); any
  other is refused (`_MINICPMO_SUPPORT_VERSION`). Its language model, vision tower and
  resampler are MiniCPM-V's (`kvcore.models.minicpmv`), for images and videos.
* The audio tower, for audio: transformers' `WhisperEncoder` of the ``audio_config``
  (`kvcore.models.whisper_audio`) and `MultiModalProjector`: linear1 (encoder_ffn_dim // 4 to
  the text hidden size) and linear2 (text hidden, square), both biased plain nn.Linear: all
  whole on every rank. The TTS (``tts_config``) is not built: its weights are dropped.
* Each tower dropped on its own by its limits; ``--mm-encoder-tp-mode data`` taken (MiniCPM-V's
  tower whole on every rank; the audio tower is whole anyway).
Checked per rank against vLLM's classes on the meta device (tests/data/weights_census/mm_audio/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.minicpmv import minicpmv_params
from kvcore.models.vision_keys import TowerPart, VisionParams, tower_config, vision_dim
from kvcore.models.whisper_audio import WHISPER, WHISPER_DEFAULTS, audio_encoder

# the MiniCPM-V version each MiniCPM-o version builds, as the model_type of its language model
LLM_TYPES = {(2, 6): "qwen2", (4, 5): "qwen3"}


def version(cfg: dict[str, Any], source: str) -> tuple[int, int]:
    """vLLM's `MiniCPMO.__new__`: the first two parts of ``version`` (absent: 2.6)."""
    given = cfg.get("version")
    if given is None:
        return (2, 6)
    parts = str(given).split(".")[:2]
    if not all(p.strip().lstrip("+-").isdigit() for p in parts):
        raise InputError(f"Invalid model version format in config: {clipped(given)}. Expected "
                         "a dot-separated version string like '4.5'.", path=source or None,
                         field="version")
    v = tuple(int(p) for p in parts)
    if len(v) != 2 or v not in LLM_TYPES:
        raise InputError(f"{clipped(given)}: vLLM's MiniCPMO supports versions 2.6, 4.5",
                         path=source or None, field="version")
    return v[0], v[1]


def llm_type(cfg: dict[str, Any], source: str) -> str:
    """The model_type of the language model vLLM builds for a minicpmo config."""
    return LLM_TYPES[version(cfg, source)]


def minicpmo_params(cfg: dict[str, Any], text_hidden: int, source: str,
                    dtype_bytes: int) -> VisionParams:
    ver = version(cfg, source)
    # (MiniCPM-V's reading of the same config, its version the one MiniCPM-o picked)
    v = minicpmv_params({**cfg, "version": f"{ver[0]}.{ver[1]}"}, text_hidden, source,
                        dtype_bytes)
    a = audio_encoder(cfg, WHISPER, text_hidden, source)
    ffn = vision_dim(tower_config(cfg, "audio_config", source), WHISPER_DEFAULTS,
                     "encoder_ffn_dim", source, key_of="audio_config")
    e = text_hidden
    projection = (ffn // 4) * e + e + e * e + e
    audio = a.total + projection
    parts = (TowerPart(("image", "video"), v.total, v.whole, v.buffers),
             TowerPart(("audio",), audio, audio, 0))
    # (the buffers are the parts': `kvcore.models.buffers.vision_buffers` sums them)
    return v._replace(total=v.total + audio, whole=v.whole + audio, buffers=0,
                      modalities=("image", "video", "audio"), parts=parts)
