"""Pixtral in Mistral's format (`PixtralForConditionalGeneration`, pixtral.py), the class vLLM
0.33 builds for a Mistral-format multimodal checkpoint (Pixtral-12B-2409, Mistral-Small-3.1 and
Magistral's ``params.json`` with a ``vision_encoder``), per TP rank.

vLLM converts the params.json (transformers_utils/configs/mistral.py `adapt_config_dict`) to a
config whose ``text_config`` holds the text model's keys under Hugging Face names
(MistralForCausalLM) and whose ``vision_config`` holds the ``vision_encoder`` object as it is.
kvcli reads that config as a config.json (`kvcore.models.mistral_format`; docs/config.md).

The class reads `VisionEncoderArgs` off the vision_config: nine keys it must give (`REQUIRED`)
and four with defaults. It builds, with no quant_config (none reaches the tower):
* the encoder, every layer (no feature-layer cut): the bias-free patch convolution and
  ``ln_pre`` whole on every rank; each layer's two RMSNorms whole, its QKVParallelLinear,
  o_proj, gate_up_proj and down_proj bias-free and split over TP (`kvcore.models.pixtral_hf`'s
  shape); no buffer (the 2-D RoPE table is made on first use);
* ``pre_mm_projector_norm`` (an RMSNorm) where ``add_pre_mm_projector_layer_norm``;
* the patch merger (a bias-free ReplicatedLinear, hidden x ``spatial_merge_size``^2 in) where
  ``mm_projector_id`` is ``patch_merge``;
* the adapter: two ReplicatedLinear to the text model's width, biased where ``adapter_bias``.
All but the encoder's linears are whole on every rank. No ``--mm-encoder-tp-mode data`` (vLLM
falls back). Checked per rank against vLLM's class on the meta device, built from the
params.json (tests/data/weights_census/mm_towers12/)."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.vision_keys import VisionParams, config_int, vision_config

ARCH = "PixtralForConditionalGeneration"
# VisionEncoderArgs's fields without a default, in its order (a missing one: its TypeError)
REQUIRED = ("hidden_size", "num_channels", "image_size", "patch_size", "intermediate_size",
            "num_hidden_layers", "num_attention_heads", "rope_theta", "image_token_id")
_SIZES = ("hidden_size", "num_channels", "patch_size", "intermediate_size",
          "num_hidden_layers", "num_attention_heads")


def _refused(message: str, source: str, field: str) -> InputError:
    return InputError(f"{message} (vLLM's {ARCH})", path=source or None,
                      field=f"vision_config.{field}")


def _flag(v: dict[str, Any], key: str, default: bool, source: str) -> bool:
    x = v.get(key, default)
    if not isinstance(x, bool):
        raise _refused(f"expected true or false, got {clipped(x)}", source, key)
    return x


def pixtral_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    v = vision_config(cfg, source)
    if cfg.get("vision_config") is None:
        raise InputError(f"missing: vLLM's {ARCH} reads its vision encoder's sizes there (a "
                         "params.json's vision_encoder)", path=source or None,
                         field="vision_config")
    missing = [k for k in REQUIRED if k not in v]
    if missing:
        quoted = [f"'{k}'" for k in missing]     # (Python's own listing: 'a', 'b', and 'c')
        names = (" and ".join(quoted) if len(quoted) < 3
                 else ", ".join(quoted[:-1]) + ", and " + quoted[-1])
        raise _refused(f"VisionEncoderArgs.__init__() missing {len(missing)} required "
                       f"positional argument{'s' * (len(missing) > 1)}: {names}", source,
                       missing[0])
    d, channels, p, inter, layers, heads = (
        config_int(v, k, None, f"vision_config.{k}", source) for k in _SIZES)
    if d % heads:
        raise _refused(f"hidden_size {d} is not a multiple of num_attention_heads {heads}",
                       source, "num_attention_heads")
    if (d // heads) % 2:
        raise _refused(f"ROPE requires even head_dim (got {d // heads})", source,
                       "num_attention_heads")
    h = text_hidden
    bias = _flag(v, "adapter_bias", True, source)
    whole = channels * p * p * d + d + layers * 2 * d
    whole += d * _flag(v, "add_pre_mm_projector_layer_norm", False, source)
    if v.get("mm_projector_id", "") == "patch_merge":
        m = config_int(v, "spatial_merge_size", 1, "vision_config.spatial_merge_size", source)
        whole += d * m * m * d
    whole += d * h + h * h + 2 * h * bias
    split = layers * (4 * d * d + 3 * d * inter)
    return VisionParams(whole + split, whole, heads, ("image",))
