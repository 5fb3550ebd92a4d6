"""ERNIE-4.5-VL's vision tower and resampler, as vLLM 0.33 builds them for
`Ernie4_5_VLMoeForConditionalGeneration` (ernie45_vl.py) beside its language model
(`kvcore.models.ernie45`).

`Ernie4_5_VisionTransformer` (the -PT checkpoints' ``vision_config``, read as vLLM reads it:
every key given): an unbiased patch projection (channels x p^2 -> embed_dim, an nn.Linear,
whole); ``depth`` blocks of the plain ViT shape (`vit_layer`, the MLP int(embed_dim x
mlp_ratio) wide); a final LayerNorm; a float32 ``inv_freq`` buffer of (head_dim / 2) / 2
entries. `VariableResolutionResamplerModel`: column-parallel linears (weights and biases split
over TP, gather_output) from pixel_hidden_size x spatial_conv_size^2 (the spatial width) to it
twice, through a LayerNorm; with ``use_temporal_conv`` two more from the spatial width x
temporal_conv_size and a LayerNorm; one to the text width and an RMSNorm, the norms whole.
vLLM asserts hidden_size == embed_dim, splits the heads over TP (it refuses a TP that does
not divide them) and skips both where the image and video limits are 0. The class does not
take ``--mm-encoder-tp-mode data`` (vLLM falls back to weights). The class's own
`_visual_token_ids_tensor_cache` (int64, one a token id given) is `token_id_buffer_bytes`.
"""

from __future__ import annotations

import math
from typing import Any

from kvcore.errors import InputError
from kvcore.models.vision_keys import (
    VisionLinear,
    VisionParams,
    config_int,
    vision_config,
    vit_layer,
)

# (the ids the class caches beside im_patch_id, where the config gives them)
TOKEN_IDS = ("image_start_token_id", "image_end_token_id", "video_start_token_id",
             "video_end_token_id")


def ernie_vl_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    v = vision_config(cfg, source)

    def dim(key: str) -> int:
        return config_int(v, key, None, f"vision_config.{key}", source)

    def top(key: str) -> int:
        return config_int(cfg, key, None, key, source)

    d, depth, heads, p = dim("embed_dim"), dim("depth"), dim("num_heads"), dim("patch_size")
    if dim("hidden_size") != d:
        raise InputError(f"{v['hidden_size']} is not embed_dim ({d}): vLLM's ERNIE-4.5-VL "
                         "asserts them equal", path=source or None,
                         field="vision_config.hidden_size")
    ratio = v.get("mlp_ratio")
    # (NaN and inf too, and 1e308, whose product with the width is inf: vLLM's
    # int(embed_dim * mlp_ratio) fails on them)
    if (not isinstance(ratio, (int, float)) or isinstance(ratio, bool)
            or not math.isfinite(ratio) or not 0 < ratio * d < 2**31):
        raise InputError(f"expected a number > 0 (an MLP below 2^31 wide), got {ratio!r}",
                         path=source or None, field="vision_config.mlp_ratio")
    layer_whole, layer_split = vit_layer(d, int(d * ratio))
    patch = dim("in_channels") * p * p * d
    spatial = top("pixel_hidden_size") * top("spatial_conv_size") ** 2
    split = 2 * (spatial * spatial + spatial) + spatial * text_hidden + text_hidden
    whole = patch + depth * layer_whole + 2 * d + 2 * spatial + text_hidden
    if cfg.get("use_temporal_conv"):
        split += spatial * top("temporal_conv_size") * spatial + spatial * spatial + 2 * spatial
        whole += 2 * spatial
    inv_freq = 4 * -(-(d // heads // 2) // 2)
    return VisionParams(whole + depth * layer_split + split, whole, heads, ("image", "video"),
                        linears=_linears(depth, d, int(d * ratio)), buffers=inv_freq)


def _linears(depth: int, d: int, inter: int) -> tuple[VisionLinear, ...]:
    """The ViT blocks' linears, built with the quant_config (the checkpoint's fused qkv, no
    shards); the resampler's take the hf_config's ``quant_config`` attribute, which it lacks:
    unquantised."""
    out: list[VisionLinear] = []
    for i in range(depth):
        at = f"vision_model.blocks.{i}"
        out += [VisionLinear(f"{at}.attn.qkv", (d, d, d), d, "column"),
                VisionLinear(f"{at}.attn.proj", (d,), d, "row"),
                VisionLinear(f"{at}.mlp.fc1", (inter,), d, "column"),
                VisionLinear(f"{at}.mlp.fc2", (d,), inter, "row")]
    return tuple(out)


def token_id_buffer_bytes(cfg: dict[str, Any]) -> int:
    """The class's visual token ids: im_patch_id and those of `TOKEN_IDS` given, int64, where
    im_patch_id is given (and not 0); on every rank, whatever the tower."""
    if not cfg.get("im_patch_id"):
        return 0
    return 8 * (1 + sum(cfg.get(k) is not None for k in TOKEN_IDS))
