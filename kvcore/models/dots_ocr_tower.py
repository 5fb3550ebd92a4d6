"""The vision tower vLLM 0.33 builds for dots.ocr (`DotsOCRForCausalLM`, dots_ocr.py
`DotsVisionTransformer`, beside its Qwen2 language model), loaded on the first pipeline stage.

A patch embedding (a biased Conv2d over ``patch_size``^2 pixels, then an RMSNorm), then
``num_hidden_layers`` blocks ``embed_dim`` wide: two RMSNorms, a QKV (QKVParallelLinear) and an
output projection, a gated MLP (fc13, two widths of ``intermediate_size``, and fc2), their
biases all present or all absent (``use_bias``); an RMSNorm after the trunk where ``post_norm``;
the patch merger: a LayerNorm (weight and bias) over ``embed_dim``, a biased linear over
``spatial_merge_size``^2 patches and a biased one to the vision config's ``hidden_size``. Whole
on every TP rank: the embedding, the norms and the row-parallel linears' biases; the rest split
(the class takes ``--mm-encoder-tp-mode data``: all whole). Its rotary table is a float32
``inv_freq`` buffer of ``head_dim // 4`` entries (rounded up). Checked per rank against vLLM's
class on the meta device (tests/data/weights_census/mm_ocr/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError
from kvcore.models.vision_keys import VisionParams, vision_config, vision_dim

# vLLM's DotsVisionConfig defaults (transformers_utils/configs/dotsocr.py)
DOTS_DEFAULTS = {"embed_dim": 1536, "hidden_size": 1536, "intermediate_size": 4224,
                 "num_hidden_layers": 42, "num_attention_heads": 12, "num_channels": 3,
                 "patch_size": 14, "spatial_merge_size": 2}


def dots_ocr_params(cfg: dict[str, Any], source: str) -> VisionParams:
    """The tower (its merger included) of a dots.ocr config."""
    v = vision_config(cfg, source)

    def dim(key: str) -> int:
        return vision_dim(v, DOTS_DEFAULTS, key, source)

    d, inter, out = dim("embed_dim"), dim("intermediate_size"), dim("hidden_size")
    heads, layers = dim("num_attention_heads"), dim("num_hidden_layers")
    bias = _flag(v, "use_bias", False, source)
    post_norm = _flag(v, "post_norm", True, source)
    h = d * dim("spatial_merge_size") ** 2
    p = dim("patch_size")
    # a block: norm1 and norm2, proj's and fc2's biases whole; qkv, proj, fc13, fc2 split
    block_whole = 2 * d + (2 * d if bias else 0)
    block_split = 4 * d * d + 3 * d * inter + ((3 * d + 2 * inter) if bias else 0)
    embed = dim("num_channels") * p * p * d + d + d
    whole = embed + layers * block_whole + (d if post_norm else 0) + 2 * d + out
    total = whole + layers * block_split + h * h + h + h * out
    # inv_freq: arange(0, head_dim // 2, 2) in float32
    rotary = (d // heads // 2 + 1) // 2
    return VisionParams(total, whole, heads, ("image",), True, mlp_width=inter,
                        buffers=4 * rotary)


def _flag(v: dict[str, Any], key: str, default: bool, source: str) -> bool:
    x = v.get(key, default)
    if not isinstance(x, bool):
        raise InputError(f"expected true or false, got {x!r}", path=source or None,
                         field=f"vision_config.{key}")
    return x
