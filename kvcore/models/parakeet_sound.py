"""The Parakeet sound encoder vLLM 0.33 builds beside Nemotron Nano VL V2's RADIO where the
config has a ``sound_config`` (nano_nemotron_vl.py `ProjectedParakeet`, parakeet.py: the Nemotron
Omni classes), under the same tower mark (image, video, audio), whole on every TP rank.

transformers' ParakeetEncoder built from vLLM's ParakeetConfig (the sound config's keys over
ParakeetEncoderConfig's defaults, with ``attention_bias`` and ``scale_input`` forced false):
the subsampling (a Conv2d of ``subsampling_conv_channels`` over one input channel, then
log2(``subsampling_factor``) - 1 depthwise and pointwise pairs, all biased, and a biased linear
from the channels x the mel bins left to the hidden size), then ``num_hidden_layers`` conformer
blocks: two feed-forwards (two bias-free linears each), the attention (q, k, v, o and the
relative-position projection, bias-free, with its bias_u and bias_v), the convolution module
(pointwise to 2 x, depthwise of ``conv_kernel_size``, a BatchNorm, pointwise; the convolutions
biased where ``convolution_bias``) and five LayerNorms; the projection: an RMSNorm and two
linears (biased where ``projection_bias``) to the text model's width. All in the model dtype
(`ProjectedParakeet` casts it), its buffers too: the float inverse frequencies (half the hidden
size) and each BatchNorm's running mean and variance, with an int64 batch counter each.
Checked per rank against vLLM's class on the meta device (tests/data/weights_census/
mm_towers12b/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.vision_keys import config_int, tower_config

# transformers 5.20.2's ParakeetEncoderConfig defaults
PARAKEET_DEFAULTS = {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 8,
                     "intermediate_size": 4096, "conv_kernel_size": 9, "subsampling_factor": 8,
                     "subsampling_conv_channels": 256, "num_mel_bins": 80,
                     "subsampling_conv_kernel_size": 3, "subsampling_conv_stride": 2}
# (vLLM's ParakeetConfig takes these without a default: a sound config lacking one fails)
NEEDED = ("projection_hidden_size", "projection_bias", "sampling_rate")


def parakeet_sound(cfg: dict[str, Any], text_hidden: int, dtype_bytes: int,
                   source: str) -> tuple[int, int]:
    """(parameters, buffer bytes) of the config's sound encoder and projection; (0, 0)
    without a ``sound_config``."""
    if cfg.get("sound_config") is None:
        return 0, 0
    s = tower_config(cfg, "sound_config", source)
    for key in NEEDED:
        if key not in s:
            raise InputError("missing: vLLM's ParakeetConfig takes it without a default",
                             path=source or None, field=f"sound_config.{key}")

    def dim(key: str) -> int:
        return config_int(s, key, PARAKEET_DEFAULTS[key], f"sound_config.{key}", source)

    d, inter, kernel = dim("hidden_size"), dim("intermediate_size"), dim("conv_kernel_size")
    channels, k, stride = (dim("subsampling_conv_channels"), dim("subsampling_conv_kernel_size"),
                           dim("subsampling_conv_stride"))
    steps = dim("subsampling_factor").bit_length() - 1      # (int(log2) of it)
    conv_bias, proj_bias = _flag(s, "convolution_bias", True, source), _flag(
        s, "projection_bias", False, source)
    width = config_int(s, "projection_hidden_size", None, "sound_config.projection_hidden_size",
                       source)
    subsampling = channels * k * k + channels + max(steps - 1, 0) * (
        channels * k * k + channels + channels * channels + channels)
    subsampling += channels * (dim("num_mel_bins") // stride ** steps) * d + d
    block = 4 * d * inter + 8 * d * d + d * kernel + 14 * d + (4 * d if conv_bias else 0)
    projection = d + d * width + width * text_hidden + (width + text_hidden if proj_bias else 0)
    layers = dim("num_hidden_layers")
    buffers = (d // 2) * dtype_bytes + layers * (2 * d * dtype_bytes + 8)
    return subsampling + layers * block + projection, buffers


def _flag(s: dict[str, Any], key: str, default: bool, source: str) -> bool:
    x = s.get(key, default)
    if not isinstance(x, bool):
        raise InputError(f"expected true or false, got {clipped(x)}", path=source or None,
                         field=f"sound_config.{key}")
    return x
