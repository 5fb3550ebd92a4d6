"""Gemma 3n's vision and audio towers, as vLLM 0.33 builds them for
`Gemma3nForConditionalGeneration` (gemma3n_mm.py) beside the text model
(`kvcore.models.gemma_weights`).

* The vision tower: timm's MobileNetV5, built by transformers' `TimmWrapperModel`
  (``AutoModel.from_config(vision_config)``) from ``vision_config.architecture``: its size is
  timm's architecture's, not the config's ``hidden_size``, so kvcli keeps it as a table,
  recorded from vLLM's class (tests/data/weights_gemma_mm/); another architecture (or
  ``model_args``) is refused.
* The audio tower: transformers' `Gemma3nAudioEncoder` (a Conformer): a two-block convolutional
  subsampler and ``conf_num_hidden_layers`` blocks, each two feed-forwards (4x wide), chunked
  attention with a relative position projection, a light 1-D convolution and a norm.
* Each tower's `Gemma3nMultimodalEmbedder`: a vocabulary-parallel embedding (``vocab_size``
  rows, padded to 64), two norms, and a row-parallel projection to the text model's width.
Both towers are plain torch modules: whole on every TP rank (no split, no head check); the
embedders' embedding and projection split. In the model dtype, the class's ``torch.zeros``
scratch for per-layer embeddings aside (`kvcore.models.buffers.estimate_buffer_bytes`).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError
from kvcore.models.vision_keys import TowerPart, VisionParams, tower_config, vision_dim
from kvcore.specs import DTYPE_BYTES

# timm 1.0.31's MobileNetV5 encoders, by architecture name (model_args null): parameters as
# vLLM builds them (tests/data/weights_gemma_mm/answers.json, vision_tower); no buffers
MOBILENET_PARAMS = {"mobilenetv5_300m_enc": 294_126_912}
# transformers 5.20.2's Gemma3nVisionConfig / Gemma3nAudioConfig defaults
VISION_DEFAULTS = {"hidden_size": 2048, "vocab_size": 128}
AUDIO_DEFAULTS = {"hidden_size": 1536, "vocab_size": 128, "input_feat_size": 128,
                  "conf_num_hidden_layers": 12, "conf_num_attention_heads": 8,
                  "conf_conv_kernel_size": 5, "conf_attention_chunk_size": 12,
                  "conf_attention_context_left": 13, "conf_attention_context_right": 0}
SSCP_DEFAULTS: dict[str, Any] = {"sscp_conv_channel_size": [128, 32],
                                 "sscp_conv_kernel_size": [[3, 3], [3, 3]],
                                 "sscp_conv_stride_size": [[2, 2], [2, 2]]}
VOCAB_PAD = 64


def gemma3n_towers(cfg: dict[str, Any], text_hidden: int, dtype: str,
                   source: str) -> VisionParams:
    vision = _vision(cfg, text_hidden, source)
    audio = _audio(cfg, text_hidden, dtype, source)
    return VisionParams(vision.total + audio.total, vision.whole + audio.whole, 0,
                        ("image", "audio"), False, (), (vision, audio))


def _embedder(width: int, vocab: int, text_hidden: int) -> tuple[int, int]:
    """(all, whole on every rank): the padded embedding and the projection split, 2 norms."""
    rows = -(-vocab // VOCAB_PAD) * VOCAB_PAD
    return rows * width + 2 * width + width * text_hidden, 2 * width


def _vision(cfg: dict[str, Any], text_hidden: int, source: str) -> TowerPart:
    v = tower_config(cfg, "vision_config", source)
    arch = v.get("architecture", "mobilenetv5_300m_enc")
    tower = MOBILENET_PARAMS.get(arch) if v.get("model_args") is None else None
    if tower is None:
        raise InputError(f"{arch!r} (model_args {v.get('model_args')!r}): kvcli counts timm's "
                         f"{', '.join(MOBILENET_PARAMS)} only (as vLLM builds it)",
                         path=source or None, field="vision_config.architecture")
    d = vision_dim(v, VISION_DEFAULTS, "hidden_size", source, key_of="vision_config")
    total, whole = _embedder(d, vision_dim(v, VISION_DEFAULTS, "vocab_size", source,
                                           key_of="vision_config"), text_hidden)
    return TowerPart(("image",), tower + total, tower + whole, 0)


def _audio(cfg: dict[str, Any], text_hidden: int, dtype: str, source: str) -> TowerPart:
    a = tower_config(cfg, "audio_config", source)

    def dim(key: str) -> int:
        return vision_dim(a, AUDIO_DEFAULTS, key, source, key_of="audio_config")

    h, layers, heads = dim("hidden_size"), dim("conf_num_hidden_layers"), dim(
        "conf_num_attention_heads")
    head, kernel = h // heads, dim("conf_conv_kernel_size")
    proj = heads * head
    block = (2 * (8 * h * h + 2 * h)                             # two feed-forwards
             + 2 * h + h * proj + head + 3 * h * proj + h * h     # attention and its norms
             + 2 * h + 3 * h * h + kernel * h                     # light conv
             + h)                                                 # the block's norm
    tower = _subsampler(a, dim("input_feat_size"), h, source) + layers * block
    total, whole = _embedder(h, dim("vocab_size"), text_hidden)
    left, right = dim("conf_attention_context_left"), a.get("conf_attention_context_right") or 0
    chunk = dim("conf_attention_chunk_size")
    # a block's buffers: 6 scalars in the model dtype (gradient clips, q_scale), the
    # softcap and h / 2 inverse timescales in float32, a chunk x context bool mask
    buffers = layers * (6 * DTYPE_BYTES[dtype] + 4 + 4 * (h // 2)
                        + chunk * (chunk + max(0, left - 1) + right))
    return TowerPart(("audio",), tower + total, tower + whole, buffers)


def _subsampler(a: dict[str, Any], freq: int, h: int, source: str) -> int:
    """Two Conv2d blocks (no bias), each with a cumulative group norm a channel, then the
    input projection from channels x the frequencies left to the hidden width."""
    try:
        chans = [int(x) for x in a.get("sscp_conv_channel_size") or SSCP_DEFAULTS[
            "sscp_conv_channel_size"]]
        kernels = [[int(x) for x in k] for k in a.get("sscp_conv_kernel_size") or SSCP_DEFAULTS[
            "sscp_conv_kernel_size"]]
        strides = [[int(x) for x in s] for s in a.get("sscp_conv_stride_size") or SSCP_DEFAULTS[
            "sscp_conv_stride_size"]]
        assert len(chans) >= 2 and len(kernels) >= 2 and len(strides) >= 2
    except (TypeError, ValueError, AssertionError):
        raise InputError("expected the subsampler's two convolutions' channels, kernels and "
                         "strides", path=source or None, field="audio_config.sscp_conv_*") from None
    n, inp = 0, 1
    for i in range(2):
        n += inp * chans[i] * kernels[i][0] * kernels[i][1] + chans[i]
        freq = (freq + 2 - kernels[i][1]) // strides[i][1] + 1
        inp = chans[i]
    return n + chans[1] * freq * h

