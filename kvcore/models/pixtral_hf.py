"""The Pixtral vision encoder as vLLM 0.33 builds it for Mistral 3 and for LLaVA checkpoints
with a ``pixtral`` vision_config (pixtral.py `PixtralHFVisionModel`), cut to the layers the
model reads (`kvcore.models.llava`).

The patch convolution (no bias) and ``ln_pre`` (an RMSNorm), then each layer's two RMSNorms
(attention_norm, ffn_norm), a QKVParallelLinear and RowParallelLinear o_proj, a
MergedColumnParallelLinear gate_up_proj and RowParallelLinear down_proj, none with a bias (heads
of hidden_size / num_attention_heads); no post-norm. TP splits the linears, which take the
model's quant_config; the convolution and the norms stay whole on every rank. Buffers: the axial
RoPE's ``inv_freq`` and ``original_inv_freq`` (transformers' PixtralVisionRotaryEmbedding),
float32, half of ``head_dim`` each. Checked per rank against vLLM's classes on the meta device
(tests/data/weights_census/llava_towers/).
"""

from __future__ import annotations

from typing import Any

from kvcore.models.vision_keys import VisionLinear, VisionParams, vision_dim

# transformers 5.20.2's PixtralVisionConfig defaults (its head_dim: hidden_size over the heads)
PIXTRAL_DEFAULTS = {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
                    "num_attention_heads": 16, "num_channels": 3, "image_size": 1024,
                    "patch_size": 16}


def encoder(v: dict[str, Any], defaults: dict[str, int], layers: int,
            source: str) -> VisionParams:
    """The encoder of vision config `v` built to `layers` layers."""

    def dim(key: str) -> int:
        return vision_dim(v, defaults, key, source)

    d, inter, p, heads = (dim("hidden_size"), dim("intermediate_size"), dim("patch_size"),
                          dim("num_attention_heads"))
    head_dim = vision_dim(v, {"head_dim": d // heads or 1}, "head_dim", source)
    whole = dim("num_channels") * p * p * d + d + layers * 2 * d
    layer_split = 4 * d * d + 3 * d * inter
    # (arange(0, head_dim, 2): ceil(head_dim / 2) frequencies, twice, 4 bytes each)
    return VisionParams(whole + layers * layer_split, whole, heads,
                        linears=_linears(layers, d, inter), buffers=2 * 4 * -(-head_dim // 2))


def _linears(layers: int, d: int, inter: int) -> tuple[VisionLinear, ...]:
    """Each layer's four linears, built with the quant_config (at vLLM's paths; the
    checkpoint's q/k/v_proj and gate/up_proj fused)."""
    out: list[VisionLinear] = []
    for i in range(layers):
        at = f"vision_tower.transformer.layers.{i}"
        out += [VisionLinear(f"{at}.attention.qkv_proj", (d, d, d), d, "column",
                             ("q_proj", "k_proj", "v_proj")),
                VisionLinear(f"{at}.attention.o_proj", (d,), d, "row"),
                VisionLinear(f"{at}.feed_forward.gate_up_proj", (inter, inter), d, "column",
                             ("gate_proj", "up_proj")),
                VisionLinear(f"{at}.feed_forward.down_proj", (d,), inter, "row")]
    return tuple(out)
