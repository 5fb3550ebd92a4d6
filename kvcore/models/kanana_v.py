"""Kanana-V's vision tower and C-Abstractor, as vLLM 0.33 builds them for
`KananaVForConditionalGeneration` (kanana_v.py, qwen2_vl.py, timm's regnet.py) beside its
Llama ``text_config`` (architectures forced to ``LlamaForCausalLM``).

The tower is Qwen2-VL's (`kvcore.models.qwen_vl`) without its merger, which the class deletes,
built without the quant_config, with its rotary cache. The abstractor, whole on every rank:
``pos_emb_size`` x ``encoder_hidden_size`` position rows where ``pos_emb``; where ``depth``,
two RegNet stages of ``depth`` bottleneck blocks (encoder width -> ``hidden_size``, then
``merge_size``^2 x it -> ``hidden_size``) and a readout MLP from ``hidden_size``, else the
readout alone from the encoder width: ``mlp_depth`` biased linears to ``output_hidden_size``.
A bottleneck block (timm's defaults: bottleneck ratio 1, group width 1, squeeze-excite 1/4 of
its input): a 1x1, a depthwise 3x3 and a 1x1 convolution without bias, each with a LayerNorm2d;
the squeeze-excite's two biased 1x1 convolutions; a 1x1 shortcut with its LayerNorm2d where
the width changes. No ``--mm-encoder-tp-mode data`` (falls back to weights).
"""

from __future__ import annotations

from typing import Any

from kvcore.models.qwen_vl import QWEN2_VL_DEFAULTS, qwen_vl_params, rotary_buffer_bytes
from kvcore.models.vision_keys import VisionParams, config_int, tower_config, vision_dim

QWEN2_VL = "Qwen2VLForConditionalGeneration"


def kanana_v_params(cfg: dict[str, Any], source: str, dtype_bytes: int) -> VisionParams:
    vit = qwen_vl_params(cfg, QWEN2_VL, source)
    v = tower_config(cfg, "vision_config", source)

    def dim(key: str) -> int:
        return vision_dim(v, QWEN2_VL_DEFAULTS, key, source)

    d, out, h = dim("embed_dim"), dim("hidden_size"), dim("embed_dim") * dim(
        "spatial_merge_size") ** 2
    # (the merger it deletes: ln_q and its MLP's row-parallel bias whole, the rest split)
    merger_whole, merger = 2 * d + out, 2 * d + out + h * h + h + h * out
    abstractor = _abstractor(tower_config(cfg, "projector_config", source), source)
    return VisionParams(vit.total - merger + abstractor, vit.whole - merger_whole + abstractor,
                        vit.heads, ("image",), mlp_width=vit.mlp_width,
                        buffers=rotary_buffer_bytes(cfg, QWEN2_VL, dtype_bytes))


def _abstractor(p: dict[str, Any], source: str) -> int:
    def key(name: str, least: int = 1) -> int:
        return config_int(p, name, None, f"projector_config.{name}", source, least)

    enc, depth, mlp_depth = key("encoder_hidden_size"), key("depth", 0), key("mlp_depth")
    wide, out = key("hidden_size") if depth else enc, key("output_hidden_size")
    total = wide * out + out + (mlp_depth - 1) * (out * out + out)
    if p.get("pos_emb"):
        total += key("pos_emb_size") * enc
    if depth:
        hid = wide
        total += _stage(depth, enc, hid) + _stage(depth, key("merge_size") ** 2 * hid, hid)
    return total


def _stage(depth: int, inp: int, out: int) -> int:
    """A RegNet stage's parameters: its first block from `inp`, the rest from `out` (counted
    at once: a depth of 10^12 looped for minutes)."""
    return _block(inp, out) + (depth - 1) * _block(out, out)


def _block(inp: int, out: int) -> int:
    se = round(inp * 0.25)      # (timm: int(round(in_chs * se_ratio)))
    convs = inp * out + 2 * out + 9 * out + 2 * out + out * out + 2 * out
    shortcut = inp * out + 2 * out if inp != out else 0
    return convs + 2 * out * se + se + out + shortcut
