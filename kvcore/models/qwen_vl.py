"""The vision towers vLLM 0.33 builds for Qwen2-VL (`Qwen2VLForConditionalGeneration`,
qwen2_vl.py `Qwen2VisionTransformer`) and Qwen2.5-VL (`Qwen2_5_VLForConditionalGeneration`,
qwen2_5_vl.py `Qwen2_5_VisionTransformer`), loaded on the first pipeline stage; Qwen3-VL's is
Qwen3.5's (`kvcore.models.qwen3_5.vision_tower_params`, with Qwen3-VL's deepstack default).

Both: a patch embedding (a Conv3d without bias), ``depth`` blocks (two norms, a biased QKV and
a biased output projection, a biased MLP) and the patch merger (a norm over the tower's width,
two biased linears over ``spatial_merge_size``^2 patches to the language model's width). Whole
on every TP rank: the embedding, the norms and the row-parallel linears' biases; the rest is
split (vLLM's default ``mm_encoder_tp_mode`` "weights"; both classes take "data").
* Qwen2-VL: LayerNorms (weight and bias); the MLP's width is ``embed_dim * mlp_ratio``, one
  fc1 and one fc2; the merger's output width is the vision config's ``hidden_size``.
* Qwen2.5-VL: RMSNorms (a weight); a gated MLP (gate_up, down) ``intermediate_size`` wide;
  the merger's output width is ``out_hidden_size``.
An fp8 checkpoint's tower linears (the blocks' and the merger's, `_linears`) are fp8 with their
scales (`kvcore.models.fp8_vision`), its ignore list renamed by the classes' mapper
(`kvcore.models.fp8_renames`). Checked per rank against vLLM's own classes on the meta device
(tests/data/weights_census/, quant2/).
"""

from __future__ import annotations

from typing import Any

from kvcore.models.vision_keys import VisionLinear, VisionParams, vision_config, vision_dim

# transformers 5.20.2's Qwen2VLVisionConfig and Qwen2_5_VLVisionConfig defaults (the published
# configs' "in_chans" is no key of theirs: in_channels stays 3)
QWEN2_VL_DEFAULTS = {"depth": 32, "embed_dim": 1280, "hidden_size": 3584, "mlp_ratio": 4,
                     "num_heads": 16, "in_channels": 3, "patch_size": 14,
                     "spatial_merge_size": 2, "temporal_patch_size": 2}
QWEN2_5_VL_DEFAULTS = {"depth": 32, "hidden_size": 3584, "intermediate_size": 3420,
                       "num_heads": 16, "in_channels": 3, "patch_size": 14,
                       "spatial_merge_size": 2, "temporal_patch_size": 2,
                       "out_hidden_size": 3584}


def qwen_vl_params(cfg: dict[str, Any], arch: str, source: str) -> VisionParams:
    """The tower (its merger included) of a Qwen2-VL or Qwen2.5-VL config."""
    v = vision_config(cfg, source)
    v2 = arch == "Qwen2VLForConditionalGeneration"
    defaults = QWEN2_VL_DEFAULTS if v2 else QWEN2_5_VL_DEFAULTS

    def dim(key: str) -> int:
        return vision_dim(v, defaults, key, source,
                          listed=key in ("patch_size", "temporal_patch_size"))

    if v2:
        d, out = dim("embed_dim"), dim("hidden_size")
        inter = d * dim("mlp_ratio")
        # LayerNorms (2 a block, the merger's) with biases; fc1 and fc2
        norm, mlp_split = 2 * d, 2 * d * inter + inter
    else:
        d, out, inter = dim("hidden_size"), dim("out_hidden_size"), dim("intermediate_size")
        # RMSNorms; gate_up_proj (two widths, biased) and down_proj
        norm, mlp_split = d, 3 * d * inter + 2 * inter
    p, t = dim("patch_size"), dim("temporal_patch_size")
    depth, h = dim("depth"), d * dim("spatial_merge_size") ** 2
    # a block's whole part: its two norms, proj's and the MLP's second linear's biases
    block_whole = 2 * norm + 2 * d
    block_split = 3 * d * d + 3 * d + d * d + mlp_split
    whole = dim("in_channels") * t * p * p * d + depth * block_whole + norm + out
    total = whole + depth * block_split + h * h + h + h * out
    return VisionParams(total, whole, dim("num_heads"), ("image", "video"), True,
                        _linears(v2, depth, d, inter, h, out), mlp_width=inter)


def _linears(v2: bool, depth: int, d: int, inter: int, h: int,
             out: int) -> tuple[VisionLinear, ...]:
    """The tower's linears, all built with the quant_config, in vLLM's order: each block's
    QKV (Qwen2-VL's a ColumnParallelLinear, one output; Qwen2.5-VL's a QKVParallelLinear,
    three, its checkpoint tensor ``qkv`` whole), proj and MLP, then the merger's mlp.0 and
    mlp.2 (the patch embedding is a Conv3d)."""
    lins = []
    for i in range(depth):
        at = f"visual.blocks.{i}"
        mlp = [VisionLinear(f"{at}.mlp.fc1", (inter,), d, "column"),
               VisionLinear(f"{at}.mlp.fc2", (d,), inter, "row")] if v2 else [
            VisionLinear(f"{at}.mlp.gate_up_proj", (inter, inter), d, "column",
                         ("gate_proj", "up_proj")),
            VisionLinear(f"{at}.mlp.down_proj", (d,), inter, "row")]
        lins += [VisionLinear(f"{at}.attn.qkv", (3 * d,) if v2 else (d, d, d), d, "column"),
                 VisionLinear(f"{at}.attn.proj", (d,), d, "row"), *mlp]
    return (*lins, VisionLinear("visual.merger.mlp.0", (h,), h, "column"),
            VisionLinear("visual.merger.mlp.2", (out,), h, "row"))


def rotary_buffer_bytes(cfg: dict[str, Any], arch: str, dtype_bytes: int) -> int:
    """The tower's rotary cache (`get_rope` at 8,192 positions, half the head dim rotated, in
    the model dtype), as Qwen3.5's."""
    v = vision_config(cfg, "")
    v2 = arch == "Qwen2VLForConditionalGeneration"
    defaults = QWEN2_VL_DEFAULTS if v2 else QWEN2_5_VL_DEFAULTS
    # (vision_dim as the tower's parameters read them: a null key is its default, as there)
    width = vision_dim(v, defaults, "embed_dim" if v2 else "hidden_size", "")
    return 8192 * (width // vision_dim(v, defaults, "num_heads", "") // 2) * dtype_bytes
