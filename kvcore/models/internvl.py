"""InternVL's vision tower and projector as vLLM 0.33 builds them for the Hugging Face format
(`InternVLForConditionalGeneration`, run by interns1.py's `InternS1ForConditionalGeneration`
and interns1_vit.py; InternS1's remote-code checkpoints, whose keys are this format's, too),
per TP rank.

`InternS1VisionModel`: the class token, a mask token where ``use_mask_token``, position rows
(patches + 1) where ``use_absolute_position_embeddings``, the biased patch convolution; each
layer its two layer scales (lambda_1, lambda_2), q/k/v projections (plain nn.Linear, biased
where ``attention_bias``), q/k RMSNorms where ``use_qk_norm``, the biased projection_layer, two
norms (``norm_type`` layer_norm: weight and bias; rms_norm: weight), and the MLP's biased
ColumnParallelLinear fc1 and RowParallelLinear fc2, the only linears TP splits (its attention is
whole on every rank: no head constraint); a final LayerNorm unless ``use_mean_pooling``.
`InternS1MultiModalProjector`: a LayerNorm and two biased nn.Linear on the hidden size times
(1 / downsample_ratio)^2, whole. No buffers; ``--mm-encoder-tp-mode data`` not taken.
Checked per rank against vLLM's classes on the meta device
(tests/data/weights_census/llava_towers/, InternS1's: internvl_chat/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.vision_keys import VisionParams, vision_config, vision_dim

# transformers 5.20.2's InternVLVisionConfig defaults (InternVL3-1B..78B-hf's sizes differ)
INTERNVL_DEFAULTS = {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
                     "num_attention_heads": 16, "num_channels": 3}
_FLAGS = {"attention_bias": False, "use_qk_norm": False, "use_mean_pooling": True,
          "use_absolute_position_embeddings": True, "use_mask_token": False}


def _pair(v: dict[str, Any], key: str, default: int, source: str) -> tuple[int, int]:
    x = v.get(key)
    x = [default, default] if x is None else [x, x] if isinstance(x, int) else x
    if not (isinstance(x, list) and len(x) == 2 and all(
            isinstance(i, int) and not isinstance(i, bool) and 1 <= i < 2**31 for i in x)):
        raise InputError(f"expected an integer >= 1 or two of them, got {clipped(x)}",
                         path=source or None, field=f"vision_config.{key}")
    return x[0], x[1]


def downsample(cfg: dict[str, Any], source: str) -> int:
    """1 / ``downsample_ratio`` (the class's default 0.5), the pixel shuffle's factor a side
    that widens the projector's input (both InternVL formats)."""
    r = cfg.get("downsample_ratio", 0.5)
    if isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 < r <= 1:
        raise InputError(f"expected a number in (0, 1], got {clipped(r)}", path=source or None,
                         field="downsample_ratio")
    return int(1 / r)


def norm_params(v: dict[str, Any], default: str, d: int, source: str) -> int:
    """The parameters of one of InternViT's norms, ``vision_config.norm_type``'s (absent:
    `default`): a LayerNorm's weight and bias, an RMSNorm's weight; any other name refused,
    as vLLM's NORM2FN lookup fails on it (intern_vit.py, interns1_vit.py), where kvcli sized
    "x" or [1] as the other kind."""
    kind = v.get("norm_type", default)
    if kind not in ("layer_norm", "rms_norm"):
        raise InputError(f"expected \"layer_norm\" or \"rms_norm\", got {clipped(kind)}: "
                         "vLLM's InternViT builds no other norm", path=source or None,
                         field="vision_config.norm_type")
    return 2 * d if kind == "layer_norm" else d


def internvl_vision_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    v = vision_config(cfg, source)

    def dim(key: str) -> int:
        return vision_dim(v, INTERNVL_DEFAULTS, key, source)

    def flag(key: str) -> bool:
        return bool(v.get(key, _FLAGS[key]))

    d, inter, layers = dim("hidden_size"), dim("intermediate_size"), dim("num_hidden_layers")
    (ih, iw), (ph, pw) = _pair(v, "image_size", 448, source), _pair(v, "patch_size", 14, source)
    positions = (ih // ph) * (iw // pw) + 1
    embeddings = (d * (1 + flag("use_mask_token")) + dim("num_channels") * ph * pw * d + d
                  + positions * d * flag("use_absolute_position_embeddings"))
    norm = norm_params(v, "layer_norm", d, source)
    layer_whole = (2 * d + 3 * d * d + 3 * d * flag("attention_bias") + 2 * d * flag("use_qk_norm")
                   + d * d + d + 2 * norm + d)
    layer_split = d * inter + inter + inter * d
    wide = d * downsample(cfg, source) ** 2
    projector = 2 * wide + wide * text_hidden + text_hidden + text_hidden ** 2 + text_hidden
    whole = (embeddings + layers * layer_whole + (0 if flag("use_mean_pooling") else 2 * d)
             + projector)
    return VisionParams(whole + layers * layer_split, whole, 0, ("image", "video"))
