"""Nemotron Nano VL V2's vision tower (`NemotronH_Nano_VL_V2`: nvidia/NVIDIA-Nemotron-Nano-12B-
v2-VL-*) as vLLM 0.33 builds it (model_executor/models/nano_nemotron_vl.py, radio.py), per TP
rank: a RADIO ViT and the MLP projector, beside the NemotronH language model of ``llm_config``
(`kvcore.models.text_config` reads it).

RADIO (``vision_config``, the checkpoint's remote RADIOConfig): its sizes are those of the timm
model ``args.model`` names (vLLM's ``VIT_TIMM_DIM_BY_NAME``: any other is refused); the patch
embedder (3 x patch^2 inputs, no bias; a video embedder of 3 x T x patch^2 where
``video_temporal_patch_size`` T > 1), a position table round(``cpe_max_size`` / patch)^2 rows,
the class tokens (one a distinct teacher name with ``cls_token_per_teacher``, else one) with
the registers that pad them to ``register_multiple``; InternViT's layer (`kvcore.models.
internvl_chat`'s: layer scales, two norms, qkv and proj, fc1 and fc2; attention whole on every
rank where TP does not divide the heads); a buffer of the teachers' indices that give a summary
(int64). The projector ``mlp1``: an RMSNorm and two bias-free nn.Linear (``vit_hidden_size`` x
round(1 / downsample_ratio)^2 -> ``projector_hidden_size`` -> the text hidden size), whole;
a LayerNorm of ``vit_hidden_size`` before it where the language model has MTP layers
(``num_nextn_predict_layers``). All of it in the model's dtype, none quantised (vLLM builds the
tower without the quant_config). The tower is marked image, video and audio; no
``--mm-encoder-tp-mode data``. With a ``sound_config`` (the Nemotron Omni classes, built by
the same class) the Parakeet sound encoder too (`kvcore.models.parakeet_sound`).
Checked per rank against vLLM's class on the meta device (tests/data/weights_census/mm_nemo/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.parakeet_sound import parakeet_sound
from kvcore.models.vision_keys import VisionParams, config_int, vision_config

# (radio.py's VIT_TIMM_DIM_BY_NAME: width, layers, heads, MLP width)
TIMM_SIZES = {"vit_small_patch16_224": (384, 12, 6, 1536),
              "vit_base_patch16_224": (768, 12, 12, 3072),
              "vit_large_patch16_224": (1024, 24, 16, 4096),
              "vit_huge_patch16_224": (1280, 32, 16, 5120),
              "vit_so400m_patch16_224": (1152, 27, 16, 4304)}
MODALITIES = ("image", "video", "audio")
# (the remote NemotronH_Nano_VL_V2_Config's defaults vLLM reads)
TOP_DEFAULTS = {"projector_hidden_size": 4096, "vit_hidden_size": 1280}
NEMOTRON_VL_ARCHS = ("NemotronH_Nano_VL_V2", "NemotronH_Nano_Omni_Reasoning_V3",
                     "NemotronH_Omni_Reasoning_V3", "NemotronH_Super_Omni_Reasoning_V3")


def towers_in_float32(text: dict[str, Any], model_dtype: str) -> bool:
    """Whether the towers are float32 beside a 2-byte model: nano_nemotron_vl.py moves the
    vision model, mlp1 and the sound encoder to the language model's ``config.dtype`` (the
    text config's as written), not to the model dtype vLLM runs at (a float32 config runs in
    bfloat16). Found by tests/data/size_fuzz (seed 2, s2-0148)."""
    written = text.get("dtype") or text.get("torch_dtype")
    return written == "float32" and model_dtype != "float32"


def _sizes(args: dict[str, Any], source: str) -> tuple[int, int, int, int]:
    name = args.get("model")
    if name not in TIMM_SIZES:
        raise InputError(f"{clipped(name)}: vLLM's RADIO tower is built for "
                         f"{', '.join(TIMM_SIZES)} only", path=source or None,
                         field="vision_config.args.model")
    return TIMM_SIZES[str(name)]


def _teachers(args: dict[str, Any], source: str) -> tuple[int, int]:
    """(distinct teacher names, teachers giving a summary) of ``args.teachers``."""
    teachers = args.get("teachers") or []
    if not isinstance(teachers, list) or not all(
            isinstance(t, dict) and "name" in t for t in teachers):
        raise InputError(f"expected a list of objects with a name, got {clipped(teachers)}",
                         path=source or None, field="vision_config.args.teachers")
    names = {str(t["name"]) for t in teachers}
    return len(names), sum(1 for t in teachers if t.get("use_summary", True))


def _class_tokens(args: dict[str, Any], teachers: int, source: str) -> int:
    """The class tokens and registers (radio.py `ClsToken`)."""
    tokens = teachers if args.get("cls_token_per_teacher", False) else 1
    multiple = args.get("register_multiple")
    if not multiple:
        return tokens
    every = config_int(args, "register_multiple", None, "vision_config.args.register_multiple",
                       source)
    return tokens + every - tokens % every


def _mtp(cfg: dict[str, Any]) -> bool:
    """Whether the language model has MTP layers (vLLM then norms the tower's output)."""
    text = cfg.get("text_config") if "text_config" in cfg else cfg.get("llm_config")
    mtp = text.get("num_nextn_predict_layers") if isinstance(text, dict) else None
    return isinstance(mtp, int) and mtp > 0


def radio_params(cfg: dict[str, Any], text_hidden: int, source: str,
                 dtype_bytes: int = 2) -> VisionParams:
    """NemotronH_Nano_VL_V2's RADIO tower and projector, and its sound encoder where it has
    one (see the module's doc)."""
    sound, sound_buffers = parakeet_sound(cfg, text_hidden, dtype_bytes, source)
    v = vision_config(cfg, source)
    given = v.get("args")     # (none: no model named, refused as such)
    if given is not None and not isinstance(given, dict):
        raise InputError(f"must be an object, got {clipped(given)}: vLLM's RADIO tower reads "
                         "its model and teachers from it", path=source or None,
                         field="vision_config.args")
    args: dict[str, Any] = given if isinstance(given, dict) else {}
    d, layers, heads, inter = _sizes(args, source)
    patch = config_int(v, "patch_size", 16, "vision_config.patch_size", source)
    frames = config_int(v, "video_temporal_patch_size", 1, "vision_config."
                        "video_temporal_patch_size", source)
    if frames > 1 and not v.get("separate_video_embedder", True):
        raise InputError("false with video_temporal_patch_size > 1: vLLM's RADIO builds a "
                         "separate video embedder only (NotImplementedError)",
                         path=source or None, field="vision_config.separate_video_embedder")
    cpe = config_int(args, "cpe_max_size", 2048, "vision_config.args.cpe_max_size", source)
    teachers, summaries = _teachers(args, source)
    rows = round(cpe / patch)
    embed = 3 * patch * patch * d * (1 + (frames if frames > 1 else 0))
    embed += rows * rows * d + _class_tokens(args, teachers, source) * d
    qkv_bias, qk_norm = bool(args.get("qkv_bias", True)), bool(args.get("qk_normalization"))
    norm = 2 * d if args.get("norm_type", "layer_norm") == "layer_norm" else d
    attention = 3 * d * (d + qkv_bias) + d * d
    layer_whole = 2 * d + 2 * norm + 2 * d * qk_norm + d + d   # (+ proj's, fc2's biases)
    mlp = d * inter + inter + inter * d
    vit, width = (config_int(cfg, k, TOP_DEFAULTS[k], k, source)
                  for k in ("vit_hidden_size", "projector_hidden_size"))
    ratio = cfg.get("downsample_ratio", 0.5)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio <= 1:
        raise InputError(f"expected a number in (0, 1], got {clipped(ratio)}",
                         path=source or None, field="downsample_ratio")
    wide = vit * round(1 / ratio) ** 2
    projector = wide + wide * width + width * text_hidden
    projector += 2 * vit if _mtp(cfg) else 0
    whole = embed + layers * layer_whole + projector + sound
    return VisionParams(whole + layers * (attention + mlp), whole, 0, MODALITIES,
                        mlp_width=inter, head_bound=(heads, layers * attention),
                        buffers=8 * summaries + sound_buffers)

