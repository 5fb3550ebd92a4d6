"""The CLIP and SigLIP vision encoders as vLLM 0.33 builds them for the LLaVA family and
PaliGemma (clip.py `CLIPVisionModel`, siglip.py `SiglipVisionModel`), cut to the layers the
model reads (`kvcore.models.llava`).

CLIP: a class embedding, the patch embedding (a Conv2d without bias), a position embedding of
(image_size / patch_size)^2 + 1 rows and ``pre_layrnorm``; SigLIP: the patch embedding with a
bias and (image_size / patch_size)^2 position rows, no class embedding, no pre-norm. Each layer
of either: two LayerNorms with biases, a biased QKVParallelLinear and RowParallelLinear
out_proj, a biased ColumnParallelLinear fc1 and RowParallelLinear fc2. The post LayerNorm only
where asked (PaliGemma's full SigLIP: yes; LLaVA's ``require_post_norm=False``: no); no pooling
head (``use_head`` False). TP splits the column- and row-parallel weights and the
column-parallel biases; embeddings, norms and row-parallel biases stay whole on every rank.
Buffers: ``position_ids``, int64, one a position row. Checked per rank against vLLM's classes
on the meta device (tests/data/weights_census/llava_towers/).
"""

from __future__ import annotations

from typing import Any

from kvcore.models.vision_keys import VisionLinear, VisionParams, vision_dim, vit_layer

# transformers 5.20.2's CLIPVisionConfig and SiglipVisionConfig defaults: what a vision_config
# of that model_type gets for a key it leaves out
CLIP_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
                 "num_attention_heads": 12, "num_channels": 3, "image_size": 224,
                 "patch_size": 32}
SIGLIP_DEFAULTS = {**CLIP_DEFAULTS, "patch_size": 16}


def encoder(kind: str, v: dict[str, Any], defaults: dict[str, int], layers: int,
            post_norm: bool, source: str) -> VisionParams:
    """The ``kind`` ("clip" or "siglip") encoder of vision config `v` built to `layers`
    layers (`defaults`: the sizes `v` leaves out)."""

    def dim(key: str) -> int:
        return vision_dim(v, defaults, key, source)

    d, inter, p = dim("hidden_size"), dim("intermediate_size"), dim("patch_size")
    positions = (dim("image_size") // p) ** 2 + (kind == "clip")
    patch = dim("num_channels") * p * p * d
    # (CLIP: the class embedding and pre_layrnorm's weight and bias; SigLIP: the conv's bias)
    embeddings = (patch + 3 * d if kind == "clip" else patch + d) + positions * d
    layer_whole, layer_split = vit_layer(d, inter)
    whole = embeddings + layers * layer_whole + (2 * d if post_norm else 0)
    # (SigLIP's MLP takes the quant_config only where both widths are multiples of 64:
    # siglip.py SiglipMLP; CLIP's always)
    mlp = kind == "clip" or d % 64 == 0 and inter % 64 == 0
    return VisionParams(whole + layers * layer_split, whole, dim("num_attention_heads"),
                        linears=encoder_linears(layers, d, inter, mlp), buffers=8 * positions)


def encoder_linears(layers: int, d: int, inter: int, mlp: bool,
                    at: str = "vision_tower.vision_model.encoder") -> tuple[VisionLinear, ...]:
    """A CLIP or SigLIP encoder's linears built with the quant_config, at vLLM's path `at`
    (``vision_tower.vision_model.encoder``: the LLaVA family's, PaliGemma's, Gemma 3's and
    LFM2-VL's SigLIP2 alike; MiniCPM-V's, Idefics3's and Phi-3-vision's elsewhere): each
    layer's QKV (the checkpoint's q/k/v_proj fused) and out_proj, and its MLP's fc1 and fc2
    where `mlp`; the patch embedding and the projector are not among them."""
    out: list[VisionLinear] = []
    for i in range(layers):
        layer = f"{at}.layers.{i}"
        out += [VisionLinear(f"{layer}.self_attn.qkv_proj", (d, d, d), d, "column",
                             ("q_proj", "k_proj", "v_proj")),
                VisionLinear(f"{layer}.self_attn.out_proj", (d,), d, "row")]
        if mlp:
            out += [VisionLinear(f"{layer}.mlp.fc1", (inter,), d, "column"),
                    VisionLinear(f"{layer}.mlp.fc2", (d,), inter, "row")]
    return tuple(out)
