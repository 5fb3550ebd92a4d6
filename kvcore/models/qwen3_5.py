"""Qwen3.5 (dense and MoE; text-only `Qwen3_5ForCausalLM` / `Qwen3_5MoeForCausalLM`, multimodal
`Qwen3_5ForConditionalGeneration` / `Qwen3_5MoeForConditionalGeneration` with the text config
under ``text_config``), as vLLM 0.33 serves it (model_executor/models/qwen3_5.py).

Qwen3-Next's layers (`kvcore.models.qwen3_next`): Gated DeltaNet beside gated full attention
with q/k norms, by ``layer_types`` (else every 4th layer full attention). What differs:
* the GDN state's dtypes: vLLM's `Qwen3_5ForConditionalGenerationConfig` hook sets
  ``mamba_ssm_cache_dtype`` from the text config's ``mamba_ssm_dtype`` (published checkpoints
  say float32), so the recurrent state is in that dtype and the conv state in the model's;
* the feed-forward by model type: ``qwen3_5_moe_text`` the sparse MoE block (with its shared
  expert and gate) on every layer, ``qwen3_5_text`` a dense gated MLP on every layer;
* the MTP modules' count is ``mtp_num_hidden_layers`` (vLLM's draft builds 1 without it);
* the multimodal classes build a vision tower (`vision_tower_params`), which vLLM's memory
  profile loads with the weights (on the first pipeline stage; partly whole on every TP rank).
Checked against vLLM's own modules and planning (tests/data/mtp_draft/qwen3_5_answers.json).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.qwen3_next import QWEN3_NEXT_DEFAULTS
from kvcore.models.vision_keys import VisionLinear, VisionParams, vision_config, vision_dim

# the text config's model type, by the config's model type (a wrapper's text config may omit
# its own: transformers builds the wrapper's text class)
TEXT_TYPES = {"qwen3_5": "qwen3_5_text", "qwen3_5_text": "qwen3_5_text",
              "qwen3_5_moe": "qwen3_5_moe_text", "qwen3_5_moe_text": "qwen3_5_moe_text"}
QWEN3_5_TYPES = ("qwen3_5_text", "qwen3_5_moe_text")     # (the text models' types)
GDN_TYPES = ("qwen3_next", *QWEN3_5_TYPES)

# transformers 5.20.2's Qwen3_5TextConfig / Qwen3_5MoeTextConfig defaults for keys a config
# omits (the GDN keys as Qwen3-Next's; full_attention_interval 4 read from its kwargs)
_COMMON = {k: QWEN3_NEXT_DEFAULTS[k] for k in (
    "head_dim", "full_attention_interval", "linear_conv_kernel_dim", "linear_key_head_dim",
    "linear_num_key_heads", "linear_num_value_heads", "linear_value_head_dim",
    "max_position_embeddings")}
QWEN3_5_DEFAULTS: dict[str, Any] = {
    **_COMMON, "vocab_size": 248320, "hidden_size": 4096, "intermediate_size": 12288,
    "num_hidden_layers": 32, "num_attention_heads": 16, "num_key_value_heads": 4,
    "tie_word_embeddings": False}
QWEN3_5_MOE_DEFAULTS: dict[str, Any] = {
    **_COMMON, "vocab_size": 248320, "hidden_size": 2048, "num_hidden_layers": 40,
    "num_attention_heads": 16, "num_key_value_heads": 2, "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512, "num_experts_per_tok": 8, "num_experts": 256,
    "tie_word_embeddings": False}
# Qwen3_5VisionConfig's (and Qwen3_5MoeVisionConfig's) defaults
VISION_DEFAULTS = {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304,
                   "in_channels": 3, "patch_size": 16, "spatial_merge_size": 2,
                   "temporal_patch_size": 2, "out_hidden_size": 3584,
                   "num_position_embeddings": 2304, "num_heads": 16}
# vLLM's MambaDType without "auto" (config/cache.py): what the hook may set
SSM_DTYPES = ("float32", "float16", "bfloat16")


def text_model_type(cfg: dict[str, Any], model_type: str, source: str) -> str:
    """The Qwen3.5 text model type of a config (or `model_type` unchanged for any other)."""
    if model_type in ("qwen3_5", "qwen3_5_moe") and not isinstance(cfg.get("text_config"), dict):
        # transformers builds the text model from its class defaults, whatever the top level
        # says: sizing the top level would not be what vLLM serves
        raise InputError(f"a {model_type} config without 'text_config': transformers then "
                         "builds the text model from its class defaults, ignoring the top-level "
                         "keys; give 'text_config' (or model_type "
                         f"{TEXT_TYPES[model_type]!r})", path=source or None, field="text_config")
    return TEXT_TYPES.get(model_type, model_type)


def ssm_dtype(c: dict[str, Any], source: str) -> str | None:
    """The recurrent state's dtype vLLM's hook sets (None: the model dtype, vLLM's "auto")."""
    raw = c.get("mamba_ssm_dtype")
    if raw is None or raw == "auto":
        return None
    if raw not in SSM_DTYPES:
        raise InputError(f"expected one of auto, {', '.join(SSM_DTYPES)}, got {raw!r} (vLLM's "
                         "mamba_ssm_cache_dtype choices)", path=source or None,
                         field="mamba_ssm_dtype")
    return str(raw)


def vision_tower_params(cfg: dict[str, Any], source: str, qwen3_vl: bool = False) -> VisionParams:
    """Parameters of the vision tower vLLM builds for a multimodal Qwen3.5
    (`Qwen3_VisionTransformer`, qwen3_vl.py): the patch embedding (a biased Conv3d), the
    position embedding, ``depth`` blocks (two LayerNorms, a biased QKV and output projection,
    a biased two-layer MLP), the patch merger (a LayerNorm, two biased linears over
    ``spatial_merge_size``^2 patches) and one post-shuffle merger per
    ``deepstack_visual_indexes`` entry, where the config lists them (else none for Qwen3.5's
    config class, which has no such key; 3 for Qwen3-VL's, whose default lists three, and
    whose tower this is too: `qwen3_vl`, whose class also allocates a scratch tensor a level,
    `VisionParams.deepstack`). Whole on every TP rank:
    the embeddings, the LayerNorms and the row-parallel linears' biases (proj, linear_fc2);
    the rest is split (vLLM's default ``mm_encoder_tp_mode`` "weights")."""
    v = vision_config(cfg, source)

    def dim(key: str) -> int:
        return vision_dim(v, VISION_DEFAULTS, key, source,
                          listed=key in ("patch_size", "temporal_patch_size"))

    d, inter, out = dim("hidden_size"), dim("intermediate_size"), dim("out_hidden_size")
    p, t = dim("patch_size"), dim("temporal_patch_size")
    embeddings = dim("in_channels") * t * p * p * d + d + dim("num_position_embeddings") * d
    block_whole, block_split = 6 * d, 4 * d * d + 2 * d * inter + inter + 3 * d
    h = d * dim("spatial_merge_size") ** 2
    merger_split = h * h + h + h * out      # (its norm and linear_fc2's bias: whole)
    deep = v.get("deepstack_visual_indexes")
    if deep is not None and not isinstance(deep, list):
        # (vLLM takes len() of it: a bool fails, where kvcli read it as the class's three)
        raise InputError(f"expected a list of layer indices, got {clipped(deep)}",
                         path=source or None, field="vision_config.deepstack_visual_indexes")
    n_deep = len(deep) if isinstance(deep, list) else 3 if qwen3_vl else 0
    depth = dim("depth")
    whole = embeddings + depth * block_whole + (2 * d + out) + n_deep * (2 * h + out)
    # (images and videos; supports_encoder_tp_data, from Qwen3VLForConditionalGeneration)
    return VisionParams(whole + depth * block_split + (1 + n_deep) * merger_split, whole,
                        dim("num_heads"), ("image", "video"), True,
                        _linears(depth, n_deep, d, inter, h, out),
                        deepstack=n_deep if qwen3_vl else 0)


def _linears(depth: int, n_deep: int, d: int, inter: int, h: int,
             out: int) -> tuple[VisionLinear, ...]:
    """The tower's linears, all built with the quant_config, in vLLM's order: the merger's,
    each deepstack merger's, then each block's QKV (one checkpoint tensor, ``qkv``), proj and
    MLP (the patch embedding is a Conv3d)."""
    mergers = ["visual.merger", *(f"visual.deepstack_merger_list.{j}" for j in range(n_deep))]
    lins = [VisionLinear(f"{m}.{fc}", (w,), inp, split) for m in mergers
            for fc, w, inp, split in (("linear_fc1", h, h, "column"),
                                      ("linear_fc2", out, h, "row"))]
    for i in range(depth):
        at = f"visual.blocks.{i}"
        lins += [VisionLinear(f"{at}.attn.qkv", (d, d, d), d, "column"),
                 VisionLinear(f"{at}.attn.proj", (d,), d, "row"),
                 VisionLinear(f"{at}.mlp.linear_fc1", (inter,), d, "column"),
                 VisionLinear(f"{at}.mlp.linear_fc2", (d,), inter, "row")]
    return tuple(lins)
