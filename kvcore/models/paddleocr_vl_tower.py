"""The vision tower and projector vLLM 0.33 builds for PaddleOCR-VL
(`PaddleOCRVLForConditionalGeneration`, paddleocr_vl.py, beside its ERNIE-4.5 language model),
loaded on the first pipeline stage.

`SiglipVisionModel`: SigLIP's encoder (`kvcore.models.clip_siglip.encoder`: the biased patch
Conv2d, (image_size / patch_size)^2 position rows and their int64 ``position_ids``, the layers,
the post LayerNorm), plus a float32 ``inv_freq`` buffer for its 2-D rotary embedding
(``head_dim // 4`` entries, rounded up); ``mlp_AR`` (`Projector`): a LayerNorm over the vision
width and two biased plain nn.Linear over 2 x 2 patches, to the text model's width, whole on
every rank. No ``--mm-encoder-tp-mode data`` (the class does not declare it: vLLM falls back to
weights). Checked per rank against vLLM's class on the meta device
(tests/data/weights_census/mm_ocr/).
"""

from __future__ import annotations

from typing import Any

from kvcore.models.clip_siglip import encoder, encoder_linears
from kvcore.models.vision_keys import VisionParams, vision_config, vision_dim

# transformers 5.20.2's PaddleOCRVisionConfig defaults
PADDLE_DEFAULTS = {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27,
                   "num_attention_heads": 16, "num_channels": 3, "image_size": 384,
                   "patch_size": 14}


def paddleocr_vl_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    """The tower and projector of a PaddleOCR-VL config (`text_hidden`: its text model's
    width)."""
    v = vision_config(cfg, source)

    def dim(key: str) -> int:
        return vision_dim(v, PADDLE_DEFAULTS, key, source)

    d, inter, layers = dim("hidden_size"), dim("intermediate_size"), dim("num_hidden_layers")
    enc = encoder("siglip", v, PADDLE_DEFAULTS, layers, True, source)
    h = 4 * d       # (the projector's merge kernel: 2 x 2 patches, whatever spatial_merge_size)
    projector = 2 * d + h * h + h + h * text_hidden + text_hidden
    rotary = (d // enc.heads // 2 + 1) // 2
    mlp = d % 64 == 0 and inter % 64 == 0
    return VisionParams(enc.total + projector, enc.whole + projector, enc.heads, ("image",),
                        False, encoder_linears(layers, d, inter, mlp,
                                               "visual.vision_model.encoder"),
                        buffers=enc.buffers + 4 * rotary)
