"""MiniCPM-V 4.6's and 4.7's vision tower (`MiniCPMV4_6ForConditionalGeneration`,
`MiniCPMV4_7ForConditionalGeneration`: minicpmv4_6.py, minicpmv4_7.py) as vLLM 0.33 builds it
beside their Qwen3.5 text model (``text_config``, read as Qwen3.5's), per TP rank.

* ``vpm``: the NaViT `Idefics2VisionTransformer` with its post LayerNorm (`kvcore.models.
  idefics3.navit`), less its last layer where ``drop_vision_last_layer`` (4.6 only: 4.7's
  class keeps every layer whatever the config says).
* ``vit_merger``: one window-attention layer (a biased QKVParallelLinear and RowParallelLinear
  out_proj, split over TP, whose size must divide the heads; a LayerNorm) and its MLP over 2 x
  2 windows: a LayerNorm of 4 x hidden and two plain biased nn.Linear through 4 x the
  intermediate size, whole on every rank.
* ``merger``: one 2 x 2 downsampling MLP (a LayerNorm of 4 x hidden, plain biased nn.Linear
  4 x hidden square then to the text width), whole: vLLM builds it with its default kernel and
  one pass whatever ``merge_kernel_size`` and ``merger_times`` say.
The class marks it an image tower alone (videos go through it too, but a limit of 0 images
drops it). Sizes absent: transformers 5.20.2's MiniCPMV4_6VisionConfig defaults. The
encoder's and the window attention's linears take the quant_config. ``--mm-encoder-tp-mode
data`` holds it all whole. Checked per rank against vLLM's classes on the meta device
(tests/data/weights_census/mm_towers12/)."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.clip_siglip import SIGLIP_DEFAULTS
from kvcore.models.idefics3 import navit
from kvcore.models.vision_keys import VisionLinear, VisionParams, vision_config, vision_dim

ARCHS = ("MiniCPMV4_6ForConditionalGeneration", "MiniCPMV4_7ForConditionalGeneration")
# MiniCPMV4_6VisionConfig's defaults (transformers 5.20.2)
DEFAULTS = {**SIGLIP_DEFAULTS, "hidden_size": 768, "intermediate_size": 3072,
            "num_hidden_layers": 12, "num_attention_heads": 12, "num_channels": 3,
            "image_size": 224, "patch_size": 16}


def _dropped(cfg: dict[str, Any], arch: str, source: str) -> bool:
    """Whether vLLM drops the encoder's last layer (4.6's ``drop_vision_last_layer``)."""
    if arch != ARCHS[0]:
        return False
    drop = cfg.get("drop_vision_last_layer", False)
    if not isinstance(drop, bool):
        raise InputError(f"expected true or false, got {clipped(drop)}", path=source or None,
                         field="drop_vision_last_layer")
    return drop


def minicpmv4_6_params(cfg: dict[str, Any], arch: str, text_hidden: int,
                       source: str) -> VisionParams:
    v = vision_config(cfg, source)
    d, inter, heads = (vision_dim(v, DEFAULTS, k, source) for k in
                       ("hidden_size", "intermediate_size", "num_attention_heads"))
    layers = vision_dim(v, DEFAULTS, "num_hidden_layers", source) - _dropped(cfg, arch, source)
    vpm = navit(v, DEFAULTS, layers, source, at="vpm")
    # the window attention: QKV and out_proj split; its norm, out_proj's bias and MLP whole
    attn_split = 3 * d * d + 3 * d + d * d
    wide, wide_inter = 4 * d, 4 * inter
    window_mlp = 2 * wide + wide * wide_inter + wide_inter + wide_inter * d + d
    window_whole = d + 2 * d + window_mlp
    h = text_hidden
    merger = 2 * wide + wide * wide + wide + wide * h + h
    whole = vpm.whole + window_whole + merger
    linears = vpm.linears + (
        VisionLinear("vit_merger.self_attn.qkv_proj", (d, d, d), d, "column",
                     ("q_proj", "k_proj", "v_proj")),
        VisionLinear("vit_merger.self_attn.out_proj", (d,), d, "row"))
    return VisionParams(vpm.total + attn_split + window_whole + merger, whole, heads,
                        ("image",), True, linears)
