"""The vision tower and projector vLLM 0.33 builds for the LLaVA family and Mistral 3
(llava.py, llava_next.py, llava_onevision.py, llava_next_video.py, mistral3.py), per TP rank.

* The tower (`init_vision_tower_for_llava`): CLIP, SigLIP (`kvcore.models.clip_siglip`) or
  Pixtral (`kvcore.models.pixtral_hf`) by the vision_config's model_type, built only up to the
  deepest layer ``vision_feature_layer`` reads (`_get_num_hidden_layers`: -2 of 24 builds 23; a
  list, its deepest), without the post-norm.
* The projector: LLaVA's and LLaVA-NeXT's ``linear_1`` column-parallel (vision hidden, times
  the feature layers for LLaVA-NeXT, to text hidden) and ``linear_2`` row-parallel, biased
  where ``multimodal_projector_bias`` (default true); LLaVA-OneVision's two plain nn.Linear,
  whole on every rank; Mistral 3's RMSNorm, patch merger (vision hidden x spatial_merge_size^2
  in, vision hidden out, a plain nn.Linear) and the two parallel linears (bias default false).
* LLaVA-NeXT-Video's (llava_next_video.py): two plain nn.Linear (vision hidden, one feature
  layer whatever the list, to text hidden), whole on every rank, no ``image_newline``; its
  pooler (``spatial_pool_mode`` average or max) has no parameters; modality video only.
* LLaVA-NeXT's and OneVision's ``image_newline`` (text hidden, a plain Parameter): kept even
  where vLLM skips the tower (`VisionParams.kept`).
Absent vision_config: the wrapper's default tower (LLaVA's CLIP-L/336, OneVision's SigLIP
so400m/384, Mistral 3's Pixtral/1540); a vision_config leaving keys out: its config class's
defaults. None of these classes takes ``--mm-encoder-tp-mode data``. Checked per rank against
vLLM's classes on the meta device (tests/data/weights_census/llava_towers/).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kvcore.errors import InputError, clipped
from kvcore.models import clip_siglip, pixtral_hf
from kvcore.models.vision_keys import VisionLinear, VisionParams, vision_config, vision_dim

_CLIP_336 = {**clip_siglip.CLIP_DEFAULTS, "hidden_size": 1024, "intermediate_size": 4096,
             "num_hidden_layers": 24, "num_attention_heads": 16, "image_size": 336,
             "patch_size": 14}
_SIGLIP_384 = {**clip_siglip.SIGLIP_DEFAULTS, "hidden_size": 1152, "intermediate_size": 4304,
               "num_hidden_layers": 26, "num_attention_heads": 16, "image_size": 384,
               "patch_size": 14}
_PIXTRAL_1540 = {**pixtral_hf.PIXTRAL_DEFAULTS, "image_size": 1540, "patch_size": 14}
# a vision_config's model_type: the encoder vLLM builds, its config class's defaults
_TOWERS = {"clip_vision_model": ("clip", clip_siglip.CLIP_DEFAULTS),
           "siglip_vision_model": ("siglip", clip_siglip.SIGLIP_DEFAULTS),
           "pixtral": ("pixtral", pixtral_hf.PIXTRAL_DEFAULTS)}


class Wrapper(NamedTuple):
    """A class's defaults (transformers 5.20.2's config classes) and its projector."""
    tower: str                      # the vision_config's model_type when it gives none
    absent: dict[str, int]          # the tower's sizes when there is no vision_config
    feature_layer: int
    bias: bool                      # multimodal_projector_bias
    projector: str
    modalities: tuple[str, ...] = ("image",)


WRAPPERS = {
    "LlavaForConditionalGeneration": Wrapper("clip_vision_model", _CLIP_336, -2, True, "llava"),
    "LlavaNextForConditionalGeneration": Wrapper("clip_vision_model", _CLIP_336, -2, True,
                                                 "next"),
    "LlavaOnevisionForConditionalGeneration": Wrapper("siglip_vision_model", _SIGLIP_384, -1,
                                                      True, "onevision", ("image", "video")),
    "Mistral3ForConditionalGeneration": Wrapper("pixtral", _PIXTRAL_1540, -1, False,
                                                "mistral3"),
    # (Mistral 3's tower and projector on a Qwen3 text model: lightonocr.py)
    "LightOnOCRForConditionalGeneration": Wrapper("pixtral", _PIXTRAL_1540, -1, False,
                                                  "mistral3"),
    # (vLLM's class takes videos only: `get_supported_mm_limits`, its tower marked "video")
    "LlavaNextVideoForConditionalGeneration": Wrapper("clip_vision_model", _CLIP_336, -2, True,
                                                      "video", ("video",)),
}


def _feature_layers(cfg: dict[str, Any], default: int, source: str) -> list[int]:
    """The layers ``vision_feature_layer`` reads (one, or a non-empty list)."""
    x = cfg.get("vision_feature_layer")
    x = default if x is None else x
    flat: list[Any] = x if isinstance(x, list) and x else [x]
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in flat):
        raise InputError(f"expected an integer or a list of integers, got {clipped(x)}",
                         path=source or None, field="vision_feature_layer")
    return [int(i) for i in flat]


def _built_layers(feature: list[int], n: int, source: str) -> int:
    """vLLM's layer count: to the deepest layer read (a negative index counts from the end)."""
    layers = max(n + i + 1 if i < 0 else i for i in feature)
    if layers > n:      # (clip.py, siglip.py, pixtral.py raise it)
        raise InputError(f"reads layer {layers} of a vision encoder of {n} "
                         "(vision_config.num_hidden_layers), which vLLM refuses",
                         path=source or None, field="vision_feature_layer")
    return max(layers, 0)


def _pool_mode(cfg: dict[str, Any], source: str) -> None:
    """LLaVA-NeXT-Video's pooler: average or max (vLLM refuses its conv pooling)."""
    mode = cfg.get("spatial_pool_mode", "average")
    if mode not in ("average", "max"):
        raise InputError(f"Unknown pooling mode: {clipped(mode)}. Expected [`average`, `max`] "
                         "(vLLM's LlavaNextVideoPooler)", path=source or None,
                         field="spatial_pool_mode")


def _lighton_keys(cfg: dict[str, Any], source: str) -> None:
    """LightOnOCR on transformers' own ``lighton_ocr`` config (not the published checkpoint's
    ``mistral3``): vLLM reads Mistral 3's keys off it, which that class does not define."""
    for key in ("vision_feature_layer", "projector_hidden_act", "multimodal_projector_bias"):
        if key not in cfg:
            raise InputError(f"missing: vLLM 0.33's LightOnOCR reads it, which transformers' "
                             f"LightOnOcrConfig does not define ('LightOnOcrConfig' object has "
                             f"no attribute '{key}')", path=source or None, field=key)


def llava_vision_params(cfg: dict[str, Any], arch: str, text_hidden: int,
                        source: str) -> VisionParams:
    w = WRAPPERS[arch]
    if cfg.get("model_type") == "lighton_ocr":
        _lighton_keys(cfg, source)
    v = vision_config(cfg, source)
    model_type = v.get("model_type", w.tower)
    if not isinstance(model_type, str) or model_type not in _TOWERS:
        raise InputError(f"{clipped(model_type)}: vLLM builds a CLIP, SigLIP or Pixtral vision "
                         f"tower for {arch}", path=source or None,
                         field="vision_config.model_type")
    kind, defaults = _TOWERS[model_type]
    if cfg.get("vision_config") is None:
        kind, defaults = _TOWERS[w.tower][0], w.absent
    d = vision_dim(v, defaults, "hidden_size", source)
    feature = _feature_layers(cfg, w.feature_layer, source)
    layers = _built_layers(feature, vision_dim(v, defaults, "num_hidden_layers", source),
                           source)
    enc = (pixtral_hf.encoder(v, defaults, layers, source) if kind == "pixtral"
           else clip_siglip.encoder(kind, v, defaults, layers, False, source))
    h = text_hidden
    given = cfg.get("multimodal_projector_bias")
    bias = w.bias if given is None else bool(given)
    kept = h if w.projector in ("next", "onevision") else 0
    if w.projector == "video":
        _pool_mode(cfg, source)
    linears = enc.linears
    if w.projector in ("onevision", "video"):
        split, whole = 0, d * h + h * h + 2 * h * bias
    else:
        inp = d * len(feature) if w.projector == "next" else d
        split, whole = inp * h + h * bias + h * h, h * bias
        # (LlavaMultiModalProjector's and Mistral 3's linears take the quant_config)
        linears += (VisionLinear("multi_modal_projector.linear_1", (h,), inp, "column"),
                    VisionLinear("multi_modal_projector.linear_2", (h,), h, "row"))
    if w.projector == "mistral3":
        m = cfg.get("spatial_merge_size", 2)
        if not isinstance(m, int) or isinstance(m, bool) or not 1 <= m < 2**16:
            raise InputError(f"expected an integer >= 1, got {clipped(m)}",
                             path=source or None, field="spatial_merge_size")
        whole += d + d * m * m * d
    return VisionParams(enc.total + split + whole + kept, enc.whole + whole + kept, enc.heads,
                        w.modalities, False, linears, kept=kept, buffers=enc.buffers)
