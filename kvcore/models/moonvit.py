"""The vision tower and projector vLLM 0.33 builds for Kimi-VL
(`KimiVLForConditionalGeneration`: moonvit.py `MoonVitPretrainedModel`, kimi_vl.py
`KimiVLMultiModalProjector`), loaded on the first pipeline stage, in the model dtype (vLLM
builds neither with the checkpoint's quant_config).

* MoonViT: a biased Conv2d patch embedding and its learnt ``init_pos_emb_height`` x
  ``init_pos_emb_width`` position table, whole; ``num_hidden_layers`` layers of two LayerNorms
  (whole), a biased QKV and output projection and a biased two-linear MLP
  ``intermediate_size`` wide (split over TP, the row-parallel biases whole); a final LayerNorm.
  Its 2D rotary table is computed on first use, not at load: no buffer.
* The projector: a LayerNorm over the tower's width and two biased ReplicatedLinear on the
  width times the ``merge_kernel_size`` area (to itself, then to the text model's width),
  whole on every rank.
The class takes ``--mm-encoder-tp-mode data``. Checked per rank against vLLM's classes on the
meta device (tests/data/weights_census/glm_kimi_towers/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.vision_keys import VisionParams, vision_config, vision_dim

# vLLM 0.33's MoonViTConfig defaults (transformers_utils/configs/moonvit.py)
MOONVIT_DEFAULTS = {"patch_size": 14, "init_pos_emb_height": 64, "init_pos_emb_width": 64,
                    "num_attention_heads": 16, "num_hidden_layers": 27, "hidden_size": 1152,
                    "intermediate_size": 4304}


def _merge_area(v: dict[str, Any], source: str) -> int:
    x = v.get("merge_kernel_size")
    x = [2, 2] if x is None else x
    if not (isinstance(x, list) and len(x) == 2 and all(
            isinstance(i, int) and not isinstance(i, bool) and 1 <= i < 2**16 for i in x)):
        raise InputError(f"expected two integers >= 1, got {clipped(x)}", path=source or None,
                         field="vision_config.merge_kernel_size")
    return int(x[0] * x[1])


def kimi_vl_vision_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    """MoonViT and the projector of a Kimi-VL config."""
    v = vision_config(cfg, source)

    def dim(key: str) -> int:
        return vision_dim(v, MOONVIT_DEFAULTS, key, source)

    d, inter, p = dim("hidden_size"), dim("intermediate_size"), dim("patch_size")
    layers, wide = dim("num_hidden_layers"), d * _merge_area(v, source)
    table = dim("init_pos_emb_height") * dim("init_pos_emb_width") * d
    # each layer's two LayerNorms and its row-parallel biases (fc1's, wo's)
    layer_whole = 4 * d + 2 * d
    layer_split = (3 * d * d + 3 * d) + d * d + (d * inter + inter) + inter * d
    projector = 2 * d + wide * wide + wide + wide * text_hidden + text_hidden
    whole = 3 * p * p * d + d + table + layers * layer_whole + 2 * d + projector
    return VisionParams(whole + layers * layer_split, whole, dim("num_attention_heads"),
                        ("image",), True, mlp_width=inter)
