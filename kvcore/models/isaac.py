"""Isaac (`IsaacForConditionalGeneration`, vLLM 0.33's isaac.py) as vLLM builds it: its text
model and its vision tower.

The text model is Qwen3ForCausalLM built from the top level of the config (IsaacConfig is a
Qwen3Config: `ISAAC_TEXT`), with an MRoPE: the class writes an ``mrope_section`` into the RoPE
parameters before it builds the layers, so the RoPE cache holds 4 x the positions
(`isaac_rope`, `kvcore.models.buffers`).

The vision tower (`IsaacVisionEmbedding`), loaded on the first pipeline stage:
A SigLIP2 transformer (``vision_config``, vLLM's PixelShuffleSiglip2VisionConfig and its
Siglip2VisionConfig defaults): a biased linear patch embedding over ``num_channels`` x
``patch_size``^2 pixels and a ``num_patches``-row position table (both replicated),
``num_hidden_layers`` plain ViT blocks (`vit_layer`), a post LayerNorm; then the projector over
``pixel_shuffle_scale_factor``^2 shuffled patches: a column-parallel linear to 4 x that width and
a row-parallel one to the text model's width, neither biased. Whole on every TP rank: the
embeddings, the norms and the row-parallel biases. The class takes ``--mm-encoder-tp-mode
data``: the SigLIP2 trunk is then whole, the projector stays split (`VisionParams.data_split`).
Checked per rank against vLLM's class on the meta device (tests/data/weights_census/
mm_towers12b/).
"""

from __future__ import annotations

from typing import Any

from kvcore.models.vision_keys import VisionParams, vision_config, vision_dim, vit_layer

ARCH = "IsaacForConditionalGeneration"
ISAAC_TEXT = {"isaac": "qwen3"}
# Siglip2VisionConfig's defaults (transformers), with PixelShuffleSiglip2VisionConfig's
# (vllm/transformers_utils/configs/isaac.py). IsaacConfig passes its top-level
# pixel_shuffle_scale and vision_max_num_patches on only to a vision config without those
# attributes, which its own class always sets: they never reach the tower
SIGLIP2_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
                    "num_attention_heads": 12, "num_channels": 3, "patch_size": 16,
                    "num_patches": 256, "pixel_shuffle_scale_factor": 1}


def isaac_params(cfg: dict[str, Any], hidden: int, source: str) -> VisionParams:
    """The tower (its projector included) of an Isaac config whose text model is `hidden`
    wide."""
    v = vision_config(cfg, source)

    def dim(key: str) -> int:
        return vision_dim(v, SIGLIP2_DEFAULTS, key, source)

    d, inter, heads = dim("hidden_size"), dim("intermediate_size"), dim("num_attention_heads")
    p, layers, scale = dim("patch_size"), dim("num_hidden_layers"), dim(
        "pixel_shuffle_scale_factor")
    layer_whole, layer_split = vit_layer(d, inter)
    embed = dim("num_channels") * p * p * d + d + dim("num_patches") * d
    shuffled = d * scale * scale
    # (its output config.hidden_size wide: the top-level IsaacConfig's, `isaac_head`)
    projector = shuffled * 4 * shuffled + 4 * shuffled * _top(cfg)["hidden_size"]
    whole = embed + layers * layer_whole + 2 * d
    total = whole + layers * layer_split + projector
    return VisionParams(total, whole, heads, ("image",), True, mlp_width=inter,
                        data_split=projector)



# The top-level IsaacConfig is a Qwen3Config of its own (vLLM's configs/isaac.py): these
# keys, where the file gives none, are Qwen3Config's defaults (transformers 5.20.2)
TOP_DEFAULTS = {"hidden_size": 4096, "vocab_size": 151936, "tie_word_embeddings": False}


def _top(cfg: dict[str, Any]) -> dict[str, Any]:
    return {k: cfg[k] if cfg.get(k) is not None else v for k, v in TOP_DEFAULTS.items()}


def isaac_head(cfg: dict[str, Any], archs: Any) -> dict[str, Any]:
    """The LM head's geometry fields: Qwen3ForCausalLM is built on the top-level config
    (isaac.py's init_vllm_registered_model with no hf_config), so its ParallelLMHead is that
    config's vocab_size x hidden_size and ties by its flag, while the layers and embedding read
    text_config ({} for any other class). Found by tests/data/size_fuzz (a draw moving the
    text config's hidden_size alone)."""
    if not (isinstance(archs, list) and archs and archs[0] == ARCH):
        return {}
    top = _top(cfg)
    return {"head_width": top["hidden_size"], "head_vocab": top["vocab_size"],
            "tie_word_embeddings": bool(top["tie_word_embeddings"])}


def isaac_rope(c: dict[str, Any], archs: Any) -> dict[str, Any]:
    """The text keys `c` with the ``mrope_section`` Isaac's class adds to its RoPE parameters
    (its value, a split of the head dim, sizes nothing); any other class's unchanged."""
    if not (isinstance(archs, list) and archs and archs[0] == ARCH):
        return c
    rp = c.get("rope_parameters") or c.get("rope_scaling")
    rp = rp if isinstance(rp, dict) else {}
    return {**c, "rope_parameters": {**rp, "mrope_section": [2, 1, 1]}}
