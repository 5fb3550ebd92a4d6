"""The vision tower vLLM 0.33 builds for GLM-OCR (`GlmOcrForConditionalGeneration`,
glm_ocr.py `GlmOcrVisionTransformer`, GLM-4.1V's class with its own tower), loaded on the first
pipeline stage with its merger and downsample.

GLM-4.1V's tower (`kvcore.models.glm4v_tower`) less its position table and post-convolution
norm, with biases and q/k norms:
* the patch embedding (a biased Conv3d, ``temporal_patch_size`` x ``patch_size``^2), the
  blocks' two RMSNorms and the post RMSNorm: whole on every rank;
* ``depth`` blocks: a biased QKV and output projection, a q_norm and a k_norm (RMSNorms one
  head wide, whole), and a biased gated MLP ``intermediate_size`` wide, split over TP (the
  row-parallel biases whole);
* the downsample: a biased Conv2d (``spatial_merge_size`` square) to ``out_hidden_size``;
* the merger: an unbiased ``out_hidden_size`` square projection, a LayerNorm (whole) and a
  gated MLP as wide as the text model's ``intermediate_size``, split.
Buffer: the rotary cache (`get_rope` at 8,192 positions, half the head dimension, in the model
dtype). The class takes ``--mm-encoder-tp-mode data`` (GLM-4.1V's). Checked per rank against
vLLM's class on the meta device (tests/data/weights_census/mm_ocr/).
"""

from __future__ import annotations

from typing import Any

from kvcore.models.vision_keys import VisionParams, tower_config, vision_config, vision_dim

# transformers 5.20.2's GlmOcrVisionConfig defaults, and GlmOcrTextConfig's intermediate_size
GLM_OCR_DEFAULTS = {"depth": 24, "hidden_size": 1024, "num_heads": 16, "in_channels": 3,
                    "patch_size": 14, "intermediate_size": 4096, "out_hidden_size": 1536,
                    "spatial_merge_size": 2, "temporal_patch_size": 2}
TEXT_INTERMEDIATE = 4096


def glm_ocr_params(cfg: dict[str, Any], source: str, dtype_bytes: int) -> VisionParams:
    """The tower (its merger and downsample included) of a GLM-OCR config."""
    v = vision_config(cfg, source)
    text = tower_config(cfg, "text_config", source)

    def dim(key: str) -> int:
        return vision_dim(v, GLM_OCR_DEFAULTS, key, source)

    d, out, inter, heads = (dim("hidden_size"), dim("out_hidden_size"),
                            dim("intermediate_size"), dim("num_heads"))
    ctx = vision_dim(text, {"intermediate_size": TEXT_INTERMEDIATE}, "intermediate_size",
                     source, key_of="text_config")
    p, merge, depth = dim("patch_size"), dim("spatial_merge_size"), dim("depth")
    patch = dim("in_channels") * dim("temporal_patch_size") * p * p * d + d
    # a block's norm1, norm2, q_norm, k_norm, proj's and down_proj's biases
    block_whole = 2 * d + 2 * (d // heads) + 2 * d
    # the post RMSNorm; the downsample; the merger's LayerNorm
    whole = patch + depth * block_whole + d + d * out * merge * merge + out + 2 * out
    block_split = 4 * d * d + 3 * d + 3 * inter * d + 2 * inter
    merger_split = out * out + 3 * ctx * out
    total = whole + depth * block_split + merger_split
    rotary = 8192 * (d // heads // 2) * dtype_bytes
    return VisionParams(total, whole, heads, ("image", "video"), True, mlp_width=inter,
                        buffers=rotary)
