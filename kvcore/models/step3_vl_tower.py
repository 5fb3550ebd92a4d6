"""Step3-VL's vision tower and projector (``Step3VLForConditionalGeneration``, vLLM 0.33's
step3_vl.py), per TP rank, beside Step3's language model (`kvcore.models.step3`).

`Step3VisionTransformer`: a class embedding, a biased patch convolution, (image_size /
patch_size)^2 + 1 position embeddings (with as many int64 ``position_ids``, a buffer), then
``num_hidden_layers`` plain ViT layers (`vit_layer`: biased QKV and out_proj, fc1 and fc2, two
LayerNorms); the projector: ``vit_downsampler`` (a biased 2 x 2 convolution to
``output_hidden_size``), ``vit_downsampler2`` (3 x 3, to twice that) and
``vit_large_projector`` (an nn.Linear to the config's ``hidden_size``, biased where
``projector_bias``: Step3VLConfig sets it to the text's, then PretrainedConfig takes a top-level
``hidden_size`` over it; found by tests/data/size_fuzz, the text's drawn apart from it),
whole on every rank. Built without the quant_config. The class takes ``--mm-encoder-tp-mode
data`` (the tower whole on every rank). Checked per rank against vLLM's class on the meta
device (tests/data/weights_census/mm_step3/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.vision_keys import VisionParams, vision_config, vision_dim, vit_layer

# Step3VisionEncoderConfig's defaults (vLLM's transformers_utils/configs/step3_vl.py)
DEFAULTS = {"hidden_size": 1792, "intermediate_size": 3072, "output_hidden_size": 4096,
            "num_hidden_layers": 63, "num_attention_heads": 16, "num_channels": 3,
            "image_size": 728, "patch_size": 14}


def step3_vl_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    v = vision_config(cfg, source)
    d, inter, out, layers, heads, channels, image, patch = (
        vision_dim(v, DEFAULTS, k, source) for k in DEFAULTS)
    bias = cfg.get("projector_bias", True)      # (Step3VLConfig's default)
    if not isinstance(bias, bool):
        raise InputError(f"expected true or false, got {clipped(bias)}", path=source or None,
                         field="projector_bias")
    # (the projector's output: the file's top-level hidden_size, else the text's)
    width = vision_dim(cfg, {"hidden_size": text_hidden}, "hidden_size", source, key_of="")
    positions = (image // patch) ** 2 + 1
    embed = d + channels * d * patch * patch + d + positions * d
    projector = (d * out * 4 + out + out * 2 * out * 9 + 2 * out
                 + 2 * out * width + (width if bias else 0))
    whole, split = vit_layer(d, inter)
    kept = embed + projector + layers * whole
    return VisionParams(kept + layers * split, kept, heads, ("image",), data_parallel=True,
                        buffers=8 * positions)
