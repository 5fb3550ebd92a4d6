"""MiDashengLM (`MiDashengLMModel`, midashenglm.py) as vLLM 0.33 builds it from vLLM's own
`MiDashengLMConfig`, per TP rank: its ``text_config`` (a Qwen2.5-Omni text config, whatever
``model_type`` it names) as `Qwen2ForCausalLM`: kvcli reads it as ``qwen2`` with that class's
defaults (`qwen2_text`; vLLM's config drops its rope_parameters, which the KV specs and weights
do not read), and for audio
* `DashengAudioTransformer` from the ``audio_encoder_config`` (DashengConfig and its
  defaults): the front end's buffers (a Hann window of ``win_length`` and the mel filter bank,
  ``n_fft`` // 2 + 1 x ``n_mels``, in the model dtype), a BatchNorm2d over ``n_mels`` (its
  running statistics buffers too), the patch embedding (a biased Conv2d of ``patch_size``), the
  time and frequency position tables over the patch grid (``n_mels`` and ``target_length`` by
  ``patch_stride``), ``depth`` ViT blocks (a QKVParallelLinear, biased by ``qkv_bias``, the
  projection and the MLP, ``mlp_ratio`` wide, biased and split over TP, whose size must divide
  ``num_heads``; LayerScales where ``init_values`` is set) and a LayerNorm;
* the projector: a biased column-parallel linear from ``embed_dim`` x ``subsample_factor`` to
  the text model's width, a biased row-parallel square one.
No ``--mm-encoder-tp-mode data`` (vLLM falls back). The quant_config reaches the linears; kvcli
lists none. Checked per rank against vLLM's class on the meta device
(tests/data/weights_census/mm_audio2/)."""

from __future__ import annotations

import math
from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.qwen_omni import TEXT_DEFAULTS
from kvcore.models.vision_keys import VisionParams, config_int, tower_config, vision_dim

ARCH = "MiDashengLMModel"
# DashengConfig's defaults (vLLM's transformers_utils/configs/midashenglm.py)
DEFAULTS = {"embed_dim": 768, "depth": 12, "num_heads": 12, "input_channels": 1,
            "target_length": 1012, "win_length": 512, "n_fft": 512, "n_mels": 64}


def qwen2_text(cfg: dict[str, Any], source: str) -> dict[str, Any]:
    """A MiDashengLM config with its text config as vLLM builds it (``qwen2``, the
    Qwen2.5-Omni text class's defaults; its qkv biased); any other config unchanged."""
    archs = cfg.get("architectures")
    if not (isinstance(archs, list) and archs and archs[0] == ARCH):
        return cfg
    text = tower_config(cfg, "text_config", source)
    return {**cfg, "text_config": {**TEXT_DEFAULTS["qwen2_5_omni_text"], **text,
                                   "model_type": "qwen2"}}


def _pair(a: dict[str, Any], key: str, source: str) -> tuple[int, int]:
    """``patch_size`` / ``patch_stride``: an integer for both sides, or a pair (default 16)."""
    x = a.get(key, 16)
    pair = x if isinstance(x, list) and len(x) == 2 else [x, x]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in pair):
        raise InputError(f"expected an integer >= 1 or a pair of them, got {clipped(x)}",
                         path=source or None, field=f"audio_encoder_config.{key}")
    return pair[0], pair[1]


def midashenglm_params(cfg: dict[str, Any], text_hidden: int, source: str,
                       dtype_bytes: int) -> VisionParams:
    a = tower_config(cfg, "audio_encoder_config", source)

    def dim(key: str) -> int:
        return vision_dim(a, DEFAULTS, key, source, key_of="audio_encoder_config")

    d, depth, heads, mels = dim("embed_dim"), dim("depth"), dim("num_heads"), dim("n_mels")
    if d % heads:
        raise InputError(f"embed_dim {d} is not a multiple of num_heads {heads}: vLLM asserts "
                         "it", path=source or None, field="audio_encoder_config.num_heads")
    ratio = a.get("mlp_ratio", 4.0)
    # (NaN and inf too, and 1e308, whose product with the width is inf: vLLM's
    # int(embed_dim * mlp_ratio) fails on them)
    if (not isinstance(ratio, (int, float)) or isinstance(ratio, bool)
            or not math.isfinite(ratio) or not 0 < ratio * d < 2**31):
        raise InputError(f"expected a number > 0 (an MLP below 2^31 wide), got {clipped(ratio)}",
                         path=source or None,
                         field="audio_encoder_config.mlp_ratio")
    hidden = int(d * ratio)
    (ph, pw), (sh, sw) = _pair(a, "patch_size", source), _pair(a, "patch_stride", source)
    qkv_bias = 3 * d if a.get("qkv_bias", True) else 0
    scales = 2 * d if a.get("init_values") else 0
    # (whole: norms, LayerScales, the row-parallel biases; split: QKV, proj, fc1 and fc2)
    block_whole, block_split = 4 * d + scales + 2 * d, (
        3 * d * d + qkv_bias + d * d + d * hidden + hidden + hidden * d)
    k = config_int(cfg, "subsample_factor", 5, "subsample_factor", source)
    whole = (2 * mels + d * dim("input_channels") * ph * pw + d
             + d * (dim("target_length") // sw) + d * (mels // sh)
             + depth * block_whole + 2 * d + text_hidden)
    split = depth * block_split + d * k * text_hidden + text_hidden + text_hidden ** 2
    # (the window, the filter bank and the BatchNorm's running mean and variance in the model
    # dtype; its int64 step count)
    buffers = (dim("win_length") + (dim("n_fft") // 2 + 1) * mels + 2 * mels) * dtype_bytes + 8
    return VisionParams(whole + split, whole, heads, ("audio",), buffers=buffers)
