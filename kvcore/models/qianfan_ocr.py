"""Qianfan-OCR (`QianfanOCRForConditionalGeneration`, qianfan_ocr.py) as vLLM 0.33 builds it:
InternVLChatModel's InternViT and mlp1 (`kvcore.models.internvl_chat`) beside the Qwen3 model of
``text_config``, its config transformers' QianfanOCRConfig.

The class renames the vision config's keys to those InternViT reads before it builds
(`_add_intern_vit_fields`): ``image_size`` and ``patch_size`` (pairs) their first entry,
``qkv_bias`` from ``attention_bias`` and ``qk_normalization`` from ``use_qk_norm`` where the
config gives none; the rest keep QianfanOCRVisionConfig's defaults (InternViT-300M's, LayerNorms).
InternVLChatModel reads ``force_image_size``, ``select_layer`` and ``ps_version``, which
QianfanOCRConfig does not default: a config without them is refused, as vLLM cannot build it.
Its tower is built in the model dtype here whatever the quantisation (the class ignores the
ViT's linears under fp8; AWQ / GPTQ towers not modelled). Checked per rank against vLLM's class
on the meta device (tests/data/weights_census/mm_towers12b/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError
from kvcore.models.internvl_chat import internvl_chat_params
from kvcore.models.vision_keys import VisionParams, vision_config

ARCH = "QianfanOCRForConditionalGeneration"
# transformers 5.20.2's QianfanOCRVisionConfig defaults, under InternViT's names
QIANFAN_VISION_DEFAULTS: dict[str, Any] = {
    "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
    "intermediate_size": 4096, "attention_bias": True, "use_qk_norm": False,
    "norm_type": "layer_norm", "image_size": 448, "patch_size": 14}
NEEDED = ("force_image_size", "select_layer", "ps_version")


def qianfan_ocr_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    """The InternViT and mlp1 of a Qianfan-OCR config whose text model is `text_hidden`
    wide."""
    for key in NEEDED:
        if key not in cfg:
            raise InputError("missing: QianfanOCRConfig does not default it and vLLM's "
                             "InternVLChatModel reads it, so vLLM cannot build the model",
                             path=source or None, field=key)
    given = {k: x for k, x in vision_config(cfg, source).items() if x is not None}
    vit = {**QIANFAN_VISION_DEFAULTS, **given}
    for key in ("image_size", "patch_size"):
        if isinstance(vit[key], list) and vit[key]:
            vit[key] = vit[key][0]
    vit.setdefault("qkv_bias", vit["attention_bias"])
    vit.setdefault("qk_normalization", vit["use_qk_norm"])
    tower = internvl_chat_params({**cfg, "vision_config": vit}, "InternVLChatModel",
                                 text_hidden, source)
    return tower._replace(linears=())
