"""MuseGlimmer (`MuseGlimmerForConditionalGeneration`, muse_glimmer.py) as vLLM 0.33 builds it:

* the text model (``muse_glimmer_text``): Llama-like layers plus an ``output_gate_proj`` (a
  bias-free column-parallel linear as wide as the queries) and four RMSNorms a layer (input,
  post-attention, pre- and post-feed-forward): `muse_text_fields`;
* with a ``vision_config``, `MuseGlimmerVisionEncoder`: ``conv1_linear`` (patch_temporal x 3 x
  patch_size^2 -> d, no bias) and ``positional_embedding_vlm`` (pos_emb_height x
  pos_emb_width x d), LayerNorms before and after, ``num_hidden_layers`` blocks (two
  LayerNorms, a biased QKVParallelLinear and row-parallel o_proj split over TP where TP
  divides the heads, else whole: is_vit_use_data_parallel's fallback; an MLP of plain biased
  nn.Linear c_fc / c_proj, whole on every rank); the adapter (``out_hidden_size`` ->
  ``projector_hidden_size`` -> square, bias-free nn.Linear) and ``vision_projection`` to the
  text width (bias-free), whole.
Sizes missing from the file: transformers 5.20.2's MuseGlimmerVisionConfig and
MuseGlimmerConfig defaults. Found by tests/data/size_fuzz (seed 2, s2-0150; seed 0's five
MuseGlimmer leftovers): kvcli counted the text model alone, without its gate and norms."""

from __future__ import annotations

from typing import Any

from kvcore.models.vision_keys import VisionParams, vision_config, vision_dim

ARCH = "MuseGlimmerForConditionalGeneration"
MUSE_TEXT = "muse_glimmer_text"
VISION_DEFAULTS = {"patch_size": 14, "pos_emb_height": 32, "pos_emb_width": 32,
                   "num_attention_heads": 16, "num_hidden_layers": 50, "hidden_size": 1536,
                   "intermediate_size": 8960, "patch_temporal": 2}
TOP_DEFAULTS = {"out_hidden_size": 6144, "projector_hidden_size": 4096}


def muse_text_fields(head_dim: int) -> dict[str, Any]:
    """The text layers' output gate (a head_dim of outputs a query head) and four norms."""
    return {"head_gate_width": head_dim, "sandwich_norms": True}


def muse_glimmer_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    if "vision_config" not in cfg:      # (`_muse_glimmer_has_vision`: no tower built)
        return VisionParams(0, 0)
    v = vision_config(cfg, source)

    def dim(key: str) -> int:
        return vision_dim(v, VISION_DEFAULTS, key, source)

    def top(key: str) -> int:
        return vision_dim(cfg, TOP_DEFAULTS, key, source, key_of="")

    d, inter, layers, heads = (dim("hidden_size"), dim("intermediate_size"),
                               dim("num_hidden_layers"), dim("num_attention_heads"))
    stem = dim("patch_temporal") * 3 * dim("patch_size") ** 2 * d + (
        dim("pos_emb_height") * dim("pos_emb_width") * d) + 2 * d + 2 * d
    # (a block's LayerNorms, o_proj's bias and its MLP, whole; q/k/v and o_proj by the heads)
    block_whole = 4 * d + d + 2 * d * inter + inter + d
    attention = 3 * d * d + 3 * d + d * d
    proj = top("projector_hidden_size")
    whole = stem + layers * block_whole + top("out_hidden_size") * proj + proj * proj + (
        proj * text_hidden)
    return VisionParams(whole + layers * attention, whole, 0, ("image", "video"),
                        head_bound=(heads, layers * attention))
