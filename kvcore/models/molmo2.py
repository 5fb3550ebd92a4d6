"""Molmo2 (`Molmo2ForConditionalGeneration`, model_type molmo2: allenai/Molmo2-8B, -4B, -O-7B)
as vLLM 0.33 builds it (model_executor/models/molmo2.py), per TP rank.

The language model's keys are its ``text_config``'s, read by vLLM's own TextConfig fields:
``qkv_bias`` biases the QKV projection; ``use_qk_norm`` adds a q and a k norm, a head wide
each where ``qk_norm_type`` is qwen3 (Qwen3 backbones), else (olmo: OLMo 3's) as wide as all
the heads and all the KV heads, whole on every rank (vLLM norms q and k before it splits them);
the embedding has ``vocab_size`` rows and ``additional_vocab_size`` more, the head
``vocab_size``, never tied (vLLM builds a ParallelLMHead of its own whatever the config says);
``norm_after`` moves the two norms, not their count. vLLM reads every TextConfig field without a
default, so a text config missing one cannot be built: refused, naming it.

The tower (`molmo2_tower`): the ViT of ``vit_config`` cut after the last layer the adapter
reads (``adapter_config.vit_layers``, negative ones counted from the end), a position table
(``image_num_pos``), a biased patch linear, each layer a biased fused QKV and out projection,
a biased MLP and two LayerNorms; the attention pooling over those layers' concatenated
features (biased q, fused k/v and out projections, ``adapter_config`` heads); the image
projector (a fused gate-and-up to ``intermediate_size``, its down projection to
``text_hidden_size``, no biases); marked image and video; no ``--mm-encoder-tp-mode data``.
Checked per rank against vLLM's class on the meta device (tests/data/weights_census/mm_molmo2/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.geometry import ModelGeometry
from kvcore.models.vision_keys import VisionParams, config_int

MOLMO2 = "Molmo2ForConditionalGeneration"
MOLMO2_TEXT = "molmo2_text"
# (molmo2.py's TextConfig fields: vLLM getattr()s each off the text config)
TEXT_FIELDS = ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
               "vocab_size", "additional_vocab_size", "qkv_bias", "num_hidden_layers",
               "intermediate_size", "hidden_act", "max_position_embeddings", "rope_theta",
               "use_qk_norm", "qk_norm_type", "layer_norm_eps", "norm_after",
               "rope_scaling_layers")


def is_molmo2(cfg: dict[str, Any]) -> bool:
    archs = cfg.get("architectures")
    return isinstance(archs, list) and bool(archs) and archs[0] == MOLMO2


def molmo2_text(cfg: dict[str, Any], c: dict[str, Any], source: str) -> dict[str, Any]:
    """Molmo2's text config with the keys kvcli reads as vLLM builds them (the module's doc)."""
    where = "text_config" if "text_config" in cfg else "llm_config"
    for key in TEXT_FIELDS:
        if key not in c:
            raise InputError("missing: vLLM's molmo2.py reads it from the text config "
                             "(AttributeError)", path=source or None, field=f"{where}.{key}")
    return {**c, "model_type": MOLMO2_TEXT, "attention_bias": bool(c["qkv_bias"]),
            "tie_word_embeddings": False}


def molmo2_fields(c: dict[str, Any], g: ModelGeometry) -> dict[str, Any]:
    """The geometry's q/k norms and added embedding rows; a quantised checkpoint's weights
    not counted (its tower's linears take the quant_config, which kvcli does not size)."""
    qk = bool(c.get("use_qk_norm"))
    olmo = qk and c.get("qk_norm_type") != "qwen3"
    return {"qk_norm": qk, "added_vocab": c.get("additional_vocab_size") or 0,
            "qk_norm_width": (g.num_attention_heads + g.num_kv_heads) * g.head_dim
            if olmo else 0,
            "weights_unmodelled": g.weights_unmodelled or (
                "a quantised Molmo2 checkpoint's vision tower" if g.quantization else "")}


def molmo2_tower(cfg: dict[str, Any], source: str) -> VisionParams:
    """The ViT (cut after the adapter's last layer), its attention pooling and the projector."""
    vit, ad = _sub(cfg, "vit_config", source), _sub(cfg, "adapter_config", source)

    def num(sub: dict[str, Any], at: str, key: str) -> int:
        return config_int(sub, key, None, f"{at}.{key}", source)

    d, inter = num(vit, "vit_config", "hidden_size"), num(vit, "vit_config", "intermediate_size")
    heads, hd = (num(vit, "vit_config", k) for k in ("num_attention_heads", "head_dim"))
    kv = num(vit, "vit_config", "num_key_value_heads")
    n, patch = num(vit, "vit_config", "num_hidden_layers"), num(vit, "vit_config",
                                                                "image_patch_size")
    layers = ad.get("vit_layers")
    if not isinstance(layers, list) or not layers or not all(
            isinstance(x, int) and not isinstance(x, bool) for x in layers):
        raise InputError(f"expected a list of layer indices, got {clipped(layers)}",
                         path=source or None, field="adapter_config.vit_layers")
    kept = min(n, max(x if x >= 0 else x + n for x in layers) + 1)
    a_hidden, a_heads, a_hd, a_kv, a_inter, out = (num(ad, "adapter_config", k) for k in (
        "hidden_size", "num_attention_heads", "head_dim", "num_key_value_heads",
        "intermediate_size", "text_hidden_size"))
    pool_in = d * len(layers)
    # (whole on every rank: the positions, the patch linear (a plain nn.Linear), each layer's
    # two LayerNorms and row-parallel biases, the pooling's out bias)
    whole = num(vit, "vit_config", "image_num_pos") * d + 3 * patch * patch * d + d
    whole += kept * 6 * d + a_hidden
    qkv = (heads + 2 * kv) * hd
    split = kept * (d * qkv + qkv + heads * hd * d + d * inter + inter + inter * d)
    a_q, a_kv2 = a_heads * a_hd, 2 * a_kv * a_hd
    split += pool_in * a_q + a_q + pool_in * a_kv2 + a_kv2 + a_q * a_hidden
    split += a_hidden * 2 * a_inter + a_inter * out
    # (the ViT's QKVParallelLinear keeps one KV head a rank where there are fewer than the
    # ranks: its K and V rows and biases, every kept layer; the pooling's merged_kv splits)
    return VisionParams(whole + split, whole, heads, ("image", "video"),
                        kv_floor=(kv, kept * 2 * hd * (d + 1)))


def _sub(cfg: dict[str, Any], key: str, source: str) -> dict[str, Any]:
    sub = cfg.get(key)
    if not isinstance(sub, dict):
        raise InputError(f"expected an object, got {clipped(sub)}: vLLM's molmo2.py reads "
                         "the tower's fields from it", path=source or None, field=key)
    return sub
