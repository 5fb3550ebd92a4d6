"""Ovis2.5's and Ovis2.6's visual tokenizer and visual embedding table, as vLLM 0.33 builds
them for `Ovis2_5`, `Ovis2_6ForCausalLM` and `Ovis2_6_MoeForCausalLM` (ovis2_5.py,
siglip2navit.py) beside the ``llm_config`` text model (Qwen3, Qwen3-MoE), which vLLM renames
``text_config``.

`Siglip2NavitModel` (``vit_config``, model_type ``siglip2_navit``; vLLM refuses another): the
patch embedding, channels x p^2 -> d with a bias (a ReplicatedLinear where ``num_patches`` >
0, else a Conv2d), and, where ``preserve_original_pe``, a position table of ``num_patches``
rows (or (image / p)^2 for the Conv2d); ``num_hidden_layers`` SigLIP layers (`vit_layer`); the
post LayerNorm; a float32 rotary ``inv_freq`` buffer of head_dim / 4 (rounded up). The head,
whole on every rank: a bias-free ReplicatedLinear from d x ``hidden_stride``^2 to
``visual_vocab_size`` - 4 (the indicator tokens) and a LayerNorm over it. The visual embedding
table (an nn.Embedding) is ``visual_vocab_size`` x the top-level ``hidden_size``. TP splits the
encoder's QKV, out_proj, fc1 and fc2 and their column-parallel biases, and the heads (vLLM
asserts they divide). The class does not take ``--mm-encoder-tp-mode data`` (vLLM falls back
to weights); limits 0 for both image and video drop it all.
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.clip_siglip import encoder_linears
from kvcore.models.vision_keys import VisionParams, config_int, tower_config, vit_layer

OVIS2_5_ARCHS = ("Ovis2_5", "Ovis2_6ForCausalLM", "Ovis2_6_MoeForCausalLM")
INDICATOR_TOKENS = 4        # (ovis2_5.py's INDICATOR_IDS: the head leaves them out)


def ovis2_5_params(cfg: dict[str, Any], source: str) -> VisionParams:
    v = tower_config(cfg, "vit_config", source)
    if v.get("model_type") != "siglip2_navit":
        raise InputError(f"{v.get('model_type')!r}: vLLM's Ovis2.5 builds a siglip2_navit "
                         "visual tokenizer only", path=source or None,
                         field="vit_config.model_type")

    def dim(key: str, least: int = 1) -> int:
        return config_int(v, key, None, f"vit_config.{key}", source, least)

    d, inter, layers, p = (dim("hidden_size"), dim("intermediate_size"),
                           dim("num_hidden_layers"), dim("patch_size"))
    heads, stride = dim("num_attention_heads"), dim("hidden_stride")
    patches = v.get("num_patches", -1)
    if not isinstance(patches, int) or isinstance(patches, bool):
        # (vLLM's Siglip2 NaViT embeddings compare it with 0 whatever preserve_original_pe
        # says: a string or null fails there; a float would size nn.Embedding)
        raise InputError(f"expected an integer (<= 0: the image's patches), got "
                         f"{clipped(patches)}", path=source or None,
                         field="vit_config.num_patches")
    patches = patches if patches > 0 else (
        dim("image_size") // p) ** 2
    embeddings = dim("num_channels") * p * p * d + d
    if v.get("preserve_original_pe") is not False:
        embeddings += patches * d
    layer_whole, layer_split = vit_layer(d, inter)
    visual_vocab = config_int(cfg, "visual_vocab_size", None, "visual_vocab_size", source,
                              INDICATOR_TOKENS + 1)
    head_width = visual_vocab - INDICATOR_TOKENS
    head = d * stride * stride * head_width + 2 * head_width
    vte = visual_vocab * config_int(cfg, "hidden_size", None, "hidden_size", source)
    whole = embeddings + layers * layer_whole + 2 * d + head + vte
    rotary = (d // heads // 2 + 1) // 2 * 4       # (float32 inv_freq: arange(0, dim, 2))
    return VisionParams(whole + layers * layer_split, whole, heads, ("image", "video"),
                        linears=encoder_linears(layers, d, inter, mlp=True,
                                                at="visual_tokenizer.vit.vision_model.encoder"),
                        buffers=rotary)
