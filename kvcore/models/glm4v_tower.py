"""The vision tower vLLM 0.33 builds for GLM-4.1V and GLM-4.5V
(`Glm4vForConditionalGeneration`, `Glm4vMoeForConditionalGeneration`: glm4_1v.py
`Glm4vVisionTransformer`), loaded on the first pipeline stage with its merger and downsample.

* the patch embedding (a biased Conv3d, ``temporal_patch_size`` x ``patch_size``^2), the
  learnt position table ((``image_size`` / ``patch_size``)^2 rows) and three RMSNorms over the
  tower's width (after the convolution, after the blocks, the blocks' two): whole on every rank;
* ``depth`` blocks: an unbiased QKV and output projection, and a gated MLP whose width is the
  vision config's ``out_hidden_size`` (not its ``intermediate_size``), split over TP;
* the downsample: a biased Conv2d (``spatial_merge_size`` square) to ``out_hidden_size``,
  whole;
* the merger: an unbiased ``out_hidden_size`` square projection, a LayerNorm (whole) and a
  gated MLP ``intermediate_size`` wide, split;
* the blocks' and the merger's linears take the model's quant_config (fp8: their block or
  per-tensor scales, `kvcore.models.fp8_vision`).
Buffers, whole on every rank: the position table's int64 ``position_ids`` and the rotary cache
(`get_rope` at 8,192 positions, half the head dimension rotated, in the model dtype). Nothing
else beside the tower (no deepstack scratch). The class takes ``--mm-encoder-tp-mode data``.
Checked per rank against vLLM's classes on the meta device
(tests/data/weights_census/glm_kimi_towers/).
"""

from __future__ import annotations

from typing import Any

from kvcore.models.vision_keys import VisionLinear, VisionParams, vision_config, vision_dim

GLM4V_ARCHS = ("Glm4vForConditionalGeneration", "Glm4vMoeForConditionalGeneration")
# transformers 5.20.2's Glm4vVisionConfig and Glm4vMoeVisionConfig defaults (the same)
GLM4V_DEFAULTS = {"depth": 24, "hidden_size": 1536, "num_heads": 12, "in_channels": 3,
                  "image_size": 336, "patch_size": 14, "intermediate_size": 13696,
                  "out_hidden_size": 4096, "spatial_merge_size": 2, "temporal_patch_size": 2}


def glm4v_vision_params(cfg: dict[str, Any], source: str, dtype_bytes: int) -> VisionParams:
    """The tower (its merger and downsample included) of a GLM-4.1V or GLM-4.5V config."""
    v = vision_config(cfg, source)

    def dim(key: str) -> int:
        return vision_dim(v, GLM4V_DEFAULTS, key, source)

    d, out, inter, heads = (dim("hidden_size"), dim("out_hidden_size"),
                            dim("intermediate_size"), dim("num_heads"))
    p, merge = dim("patch_size"), dim("spatial_merge_size")
    positions = (dim("image_size") // p) ** 2
    patch = dim("in_channels") * dim("temporal_patch_size") * p * p * d + d
    # the blocks' two RMSNorms, post_conv_layernorm and post_layernorm; the downsample
    whole = (patch + positions * d + 2 * d * dim("depth") + 2 * d
             + d * out * merge * merge + out + 2 * out)
    block_split = 4 * d * d + 3 * out * d           # qkv, proj; gate_up and down
    merger_split = out * out + 3 * inter * out
    total = whole + dim("depth") * block_split + merger_split
    rotary = 8192 * (d // heads // 2) * dtype_bytes
    return VisionParams(total, whole, heads, ("image", "video"), True,
                        _linears(dim("depth"), d, out, inter), mlp_width=out,
                        buffers=8 * positions + rotary)


def _linears(depth: int, d: int, out: int, inter: int) -> tuple[VisionLinear, ...]:
    """The blocks' and the merger's linears, built with the quant_config (vLLM's paths)."""
    blocks: list[VisionLinear] = []
    for i in range(depth):
        at = f"visual.blocks.{i}"
        blocks += [VisionLinear(f"{at}.attn.qkv", (d, d, d), d, "column"),
                   VisionLinear(f"{at}.attn.proj", (d,), d, "row"),
                   VisionLinear(f"{at}.mlp.gate_up_proj", (out, out), d, "column",
                                ("gate_proj", "up_proj")),
                   VisionLinear(f"{at}.mlp.down_proj", (d,), out, "row")]
    return (*blocks, VisionLinear("visual.merger.proj", (out,), out, "column"),
            VisionLinear("visual.merger.gate_up_proj", (inter, inter), out, "column",
                         ("gate_proj", "up_proj")),
            VisionLinear("visual.merger.down_proj", (out,), inter, "row"))
