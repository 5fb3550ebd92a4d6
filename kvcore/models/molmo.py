"""Molmo (`MolmoForCausalLM`, model_type molmo: allenai/Molmo-7B-D-0924, Molmo-7B-O-0924) as
vLLM 0.33 builds it (model_executor/models/molmo.py), per TP rank.

The language model's keys are the config's own (remote code, one flat config): its
``intermediate_size`` is the fused gate-and-up width (each half of it), ``qkv_bias`` biases the
QKV projection (not o_proj), ``attention_layer_norm`` adds a q norm as wide as the model and a
k norm as wide as the KV heads (whole on every rank: vLLM gathers q and k to norm them); the
embedding has ``embedding_size`` (else ``vocab_size``) rows and 128 more (its added image
tokens), the untied head ``embedding_size``. vLLM refuses what it cannot build: a
``layer_norm_type`` other than rms (an assert), ``weight_tying`` (it ties the head to a
``model.transformer.wte`` it does not build), a null or absent ``num_key_value_heads``
(its ModelConfig's total_num_kv_heads must be an integer); MolmoE's experts
(``moe_num_experts``) it would build as a dense MLP, which cannot load them: refused too.

The tower is vLLM's own, whatever the config says (``VisionBackboneConfig``: CLIP ViT-L/14 at
336 px, 23 layers kept, 577 positions, no patch bias, a pre-LayerNorm), an attention pooling
over two of its layers' features (q/k/v 2,048 wide in, biased), the image projector (a fused
gate-and-up from 1,024 to the text MLP's half width, its down projection, no biases) and two
pad embeddings; marked image; no ``--mm-encoder-tp-mode data``. Its linears take the
quant_config (`_linears`: fp8, AWQ, GPTQ and compressed-tensors sized as the language model's;
other methods refused by name). Checked per rank against vLLM's class on the meta device
(tests/data/weights_census/mm_nemo/; quantised: quant_molmo/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.geometry import ModelGeometry
from kvcore.models.int_quant import LINEAR_METHODS
from kvcore.models.vision_keys import VisionLinear, VisionParams, config_int

MOLMO = "molmo"
ADDED_VOCAB = 128           # (molmo.py ADDITIONAL_VOCAB_SIZE: the embedding's extra rows)
# (molmo.py VisionBackboneConfig: width, layers, heads, MLP width, positions, patch;
# VIT_LAYERS: the pooling reads two layers' features)
VIT = (1024, 23, 16, 4096, 577, 14)
POOLED_LAYERS = 2


def molmo_text(c: dict[str, Any], source: str) -> dict[str, Any]:
    """Molmo's config with the keys kvcli reads as vLLM builds them (see the module's doc)."""
    if c.get("layer_norm_type", "rms") != "rms":
        raise InputError(f"{clipped(c['layer_norm_type'])}: vLLM's molmo.py builds RMSNorm "
                         "only (it asserts rms)", path=source or None, field="layer_norm_type")
    if c.get("weight_tying"):
        raise InputError("true: vLLM's molmo.py ties the head to model.transformer.wte, which "
                         "it does not build (AttributeError), so it cannot load the model",
                         path=source or None, field="weight_tying")
    if c.get("moe_num_experts"):
        raise InputError(f"{clipped(c['moe_num_experts'])} (MolmoE): vLLM's molmo.py builds a "
                         "dense MLP in every layer and cannot load the experts",
                         path=source or None, field="moe_num_experts")
    if c.get("num_key_value_heads") is None:
        # (absent: the remote class's default, None; vLLM's words, from its ModelConfig)
        raise InputError("must be an integer: vLLM reads it as total_num_kv_heads, and its "
                         "ModelConfig refuses null (Input should be a valid integer)",
                         path=source or None, field="num_key_value_heads")
    inter = c.get("intermediate_size")
    if not isinstance(inter, int) or isinstance(inter, bool) or inter < 2:
        raise InputError(f"expected an integer >= 2 (the fused gate and up width), got "
                         f"{clipped(inter)}", path=source or None, field="intermediate_size")
    rows = c.get("embedding_size") or c.get("vocab_size")
    if c.get("embedding_size"):
        # (vLLM's `embedding_size or vocab_size`: given, it is the rows, named as written)
        rows = config_int(c, "embedding_size", None, "embedding_size", source)
    return {**c, "intermediate_size": inter // 2, "attention_bias": bool(c.get("qkv_bias")),
            "vocab_size": rows, "tie_word_embeddings": False}


def molmo_fields(c: dict[str, Any], g: ModelGeometry) -> dict[str, Any]:
    """The geometry's q/k norms (their widths summed), added embedding rows, and a checkpoint
    quantised by a method kvcli does not size refused (its tower's linears take it)."""
    qk = bool(c.get("attention_layer_norm"))
    return {"qk_norm": qk, "qk_norm_width": g.hidden_size + g.num_kv_heads * g.head_dim
            if qk else 0, "added_vocab": ADDED_VOCAB,
            "weights_unmodelled": g.weights_unmodelled or (
                "a quantised Molmo checkpoint's vision tower" if g.quantization
                and g.quantization not in LINEAR_METHODS else "")}


def molmo_tower(c: dict[str, Any], text_hidden: int) -> VisionParams:
    """The ViT, its attention pooling, the image projector and the pad embeddings."""
    d, layers, heads, inter, positions, patch = VIT
    half = c["intermediate_size"] // 2      # (the fused width's half: molmo_text checks it)
    wide = POOLED_LAYERS * d
    whole = d + positions * d + 3 * patch * patch * d + 2 * d + layers * 6 * d
    whole += d + 2 * wide                               # (pooling's wo bias; pad_embed)
    split = layers * (3 * (d * d + d) + d * d + d * inter + inter + inter * d)
    split += 3 * (wide * d + d) + d * d + d * 2 * half + half * text_hidden
    return VisionParams(whole + split, whole, heads, ("image",),
                        linears=_linears(layers, d, inter, wide, half, text_hidden))


def _linears(layers: int, d: int, inter: int, wide: int, half: int,
             text_hidden: int) -> tuple[VisionLinear, ...]:
    """The ViT's, the pooling's and the projector's linears, in vLLM's order, all built with
    the quant_config (molmo.py)."""
    out: list[VisionLinear] = []
    for i in range(layers):
        at = f"vision_backbone.image_vit.transformer.resblocks.{i}"
        out += [VisionLinear(f"{at}.attention.{w}", (d,), d, "column") for w in ("wq", "wk",
                                                                                 "wv")]
        out += [VisionLinear(f"{at}.attention.wo", (d,), d, "row"),
                VisionLinear(f"{at}.feed_forward.w1", (inter,), d, "column"),
                VisionLinear(f"{at}.feed_forward.w2", (d,), inter, "row")]
    pool = "vision_backbone.image_pooling_2d"
    out += [VisionLinear(f"{pool}.{w}", (d,), wide, "column") for w in ("wq", "wk", "wv")]
    out += [VisionLinear(f"{pool}.wo", (d,), d, "row"),
            VisionLinear("vision_backbone.image_projector.merged_linear", (half, half), d,
                         "column", ("gate_proj", "up_proj")),
            VisionLinear("vision_backbone.image_projector.down_proj", (text_hidden,), half,
                         "row")]
    return tuple(out)
