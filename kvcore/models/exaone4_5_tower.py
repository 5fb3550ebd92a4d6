"""The vision tower vLLM 0.33 builds for EXAONE 4.5 (`Exaone4_5_ForConditionalGeneration`,
exaone4_5.py `EXAONE4_5_VisionTransformer`, beside its EXAONE 4 text model), loaded on the first
pipeline stage.

Qwen2.5-VL's tower (`kvcore.models.qwen_vl`: a Conv3d patch embedding without bias, RMSNorms,
the patch merger to ``out_hidden_size``) whose blocks attend with grouped KV heads: the biased
QKV holds ``num_heads`` query and 2 x ``num_key_value_heads`` key and value heads of
``hidden_size / num_heads``; the biased output projection and the biased gated MLP
(``intermediate_size``) as Qwen2.5-VL's. Whole on every TP rank: the embedding, the norms and the
row-parallel biases; the rest split (the class takes ``--mm-encoder-tp-mode data``: all whole).
Its rotary cache: 8,192 rows x half the head dim in the model dtype. Not modelled: the KV heads
vLLM replicates where TP exceeds them (a rank then keeps one of each; the published tower's 8
KV heads cover TP 8). Checked per rank against vLLM's class on the meta device
(tests/data/weights_census/mm_towers12b/).
"""

from __future__ import annotations

from typing import Any

from kvcore.models.vision_keys import VisionParams, vision_config, vision_dim

ARCH = "Exaone4_5_ForConditionalGeneration"
# transformers 5.20.2's Exaone4_5_VisionConfig defaults
EXAONE4_5_VISION_DEFAULTS = {"depth": 32, "hidden_size": 3584, "intermediate_size": 3420,
                             "num_heads": 16, "num_key_value_heads": 8, "in_channels": 3,
                             "patch_size": 14, "spatial_merge_size": 2,
                             "temporal_patch_size": 2, "out_hidden_size": 3584}


def exaone4_5_params(cfg: dict[str, Any], source: str, dtype_bytes: int) -> VisionParams:
    """The tower (its merger included) of an EXAONE 4.5 config."""
    v = vision_config(cfg, source)

    def dim(key: str) -> int:
        return vision_dim(v, EXAONE4_5_VISION_DEFAULTS, key, source,
                          listed=key in ("patch_size", "temporal_patch_size"))

    d, out, inter = dim("hidden_size"), dim("out_hidden_size"), dim("intermediate_size")
    heads, kv = dim("num_heads"), dim("num_key_value_heads")
    head_dim, p, t = d // heads, dim("patch_size"), dim("temporal_patch_size")
    depth, h = dim("depth"), d * dim("spatial_merge_size") ** 2
    qkv = (heads + 2 * kv) * head_dim
    # a block: two RMSNorms, proj's and down_proj's biases whole; the QKV, proj, gate_up and
    # down split
    block_whole = 2 * d + 2 * d
    block_split = qkv * d + qkv + d * d + 3 * d * inter + 2 * inter
    whole = dim("in_channels") * t * p * p * d + depth * block_whole + d + out
    total = whole + depth * block_split + h * h + h + h * out
    return VisionParams(total, whole, heads, ("image", "video"), True, mlp_width=inter,
                        buffers=8192 * (head_dim // 2) * dtype_bytes)
