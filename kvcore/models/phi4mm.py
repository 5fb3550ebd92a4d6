"""Phi-4-multimodal's towers (``Phi4MMForCausalLM``, model_type phi4mm, remote code) as vLLM
0.33 builds them (phi4mm.py, phi4mm_audio.py, phi4mm_utils.py), per TP rank, each dropped on
its own with its modalities' limits (`kvcore.models.mm_serving`).

* Image (and video): `Phi4MMImageEncoder`, vLLM's fixed SigLIP NaViT (1,152 wide, 4,304 MLP,
  16 heads, 448 px, patch 14: `kvcore.models.idefics3.navit`) cut at ``img_processor.layer_idx``
  (absent or null: -2, 26 of 27 layers) without its post LayerNorm, ``glb_GN`` and ``sub_GN``
  (1,152 each) and ``img_projection`` (two biased nn.Linear to the text hidden size).
* Audio: `AudioEmbedding`'s conformer (``audio_processor.config``), all plain modules, whole
  on every rank: the NeMo dw_striding subsampling (a 3 x 3 conv, then a depthwise and a
  pointwise conv a further halving, and ``out`` from conv_channels x the halved mel bins),
  the T5 relative bias (max distance x 2 unless symmetric, x heads), the mel mean / inverse
  std, ``num_blocks`` conformer blocks (two GLU feed-forwards, biased q/k/v/out, the GLU
  convolution module, norms) and two projections (``audio_projection`` and
  ``audio_projection_for_vision``); its ``dev_type`` scalar buffer in the model dtype.
No LoRA weights are built (``vision_lora`` / ``speech_lora`` need --enable-lora and adapters);
``--mm-encoder-tp-mode data`` not taken. A conformer setting kvcli does not model (another
input layer or bias type, batch norm, a linear GLU, a Q-Former or conv downsampling,
attention groups, NeMo settings beyond conv_channels) leaves the towers uncounted, with the
warning. Checked per rank against vLLM's classes on the meta device
(tests/data/weights_census/mm_minicpm_idefics_phi/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.clip_siglip import SIGLIP_DEFAULTS
from kvcore.models.idefics3 import navit
from kvcore.models.vision_keys import TowerPart, VisionParams, config_int

# get_navit_vision_model's SiglipVisionConfig
NAVIT = {**SIGLIP_DEFAULTS, "hidden_size": 1152, "image_size": 448, "intermediate_size": 4304,
         "num_attention_heads": 16, "num_hidden_layers": 27, "patch_size": 14}
# ConformerEncoder's defaults for the keys sized here
CONFORMER = {"attention_dim": 256, "attention_heads": 4, "linear_units": 2048, "num_blocks": 6,
             "kernel_size": 3, "ext_pw_out_channel": 0, "ext_pw_kernel_size": 1,
             "depthwise_seperable_out_channel": 256, "depthwise_multiplier": 1,
             "time_reduction": 4}
# settings the count assumes (ConformerEncoder's defaults, and Phi-4-multimodal's)
_ASSUMED = {"input_layer": "nemo_conv", "batch_norm": False, "linear_glu_in_convm": False,
            "attention_group_size": 1}


def _image(cfg: dict[str, Any], h: int, source: str) -> TowerPart:
    proc = cfg.get("img_processor")
    idx = proc.get("layer_idx", -2) if isinstance(proc, dict) else -2
    n = NAVIT["num_hidden_layers"]
    if not isinstance(idx, int) or isinstance(idx, bool) or not -n <= idx < n:
        raise InputError(f"expected a layer of the 27-layer SigLIP tower, got {clipped(idx)}",
                         path=source or None, field="img_processor.layer_idx")
    enc = navit({}, NAVIT, n + idx + 1 if idx < 0 else idx + 1, source, post_norm=False)
    d = NAVIT["hidden_size"]
    whole = 2 * d + d * h + h + h * h + h
    return TowerPart(("image", "video"), enc.total + whole, enc.whole + whole, 0)


def _conformer(a: dict[str, Any], source: str) -> int:
    def get(key: str, least: int = 1) -> int:
        return config_int(a, key, CONFORMER[key], f"audio_processor.config.{key}", source, least)

    d, units, k = get("attention_dim"), get("linear_units"), get("kernel_size")
    ext, ext_k = get("ext_pw_out_channel", 0), get("ext_pw_kernel_size")
    dws, mult = get("depthwise_seperable_out_channel", 0), get("depthwise_multiplier")
    nemo = _obj(a, "nemo_conv_settings", "audio_processor.config.nemo_conv_settings", source)
    chans = config_int(nemo, "conv_channels", 256, "audio_processor.config.nemo_conv_settings."
                       "conv_channels", source)
    mels = config_int(a, "input_size", 80, "audio_processor.config.input_size", source)
    embedding = _obj(a, "encoder_embedding_config",
                     "audio_processor.config.encoder_embedding_config", source)
    norm_mels = config_int(embedding, "input_size", mels,
                           "audio_processor.config.encoder_embedding_config.input_size", source)
    halvings, freq = get("time_reduction").bit_length() - 1, mels
    embed = 9 * chans + chans + (halvings - 1) * (10 * chans + chans * chans + chans)
    for _ in range(halvings):
        freq = (freq - 1) // 2 + 1
    embed += chans * freq * d + d
    t5 = _obj(a, "relative_attention_bias_args",
              "audio_processor.config.relative_attention_bias_args", source)
    buckets = config_int(t5, "t5_bias_max_distance", 1000, "audio_processor.config."
                         "relative_attention_bias_args.t5_bias_max_distance", source)
    bias = buckets * (1 if t5.get("t5_bias_symmetric") else 2) * get("attention_heads")
    glu = bool(a.get("bias_in_glu", True))
    feed_forward = 2 * d + d * 2 * units + 2 * units * glu + units * d + d
    conv = 2 * d + d * mult * k + d * mult
    if ext:
        conv += d * ext * ext_k + ext + d * 2 * ext * ext_k + 2 * ext + 2 * ext * glu
        conv += ext * d + d if ext != d else 0
    else:
        conv += 6       # (pw_conv_simplify_w and _b)
    if dws:
        conv += d * mult * dws + dws + (dws * d + d if dws != d else 0)
    elif mult != 1:
        conv += d * mult * d + d
    block = 2 * feed_forward + 4 * (d * d + d) + conv + 4 * d
    return embed + bias + 2 * norm_mels + get("num_blocks") * block


def _obj(d: dict[str, Any], key: str, field: str, source: str) -> dict[str, Any]:
    """``d[key]``, an object (absent, null or empty: {}); else refused: vLLM's conformer
    reads its keys (a list there was an AttributeError)."""
    x = d.get(key) or {}
    if not isinstance(x, dict):
        raise InputError(f"must be an object, got {clipped(x)}", path=source or None,
                         field=field)
    return x


def _encoder(cfg: dict[str, Any], source: str) -> dict[str, Any]:
    """``audio_processor.config``, the conformer's keys: vLLM's AudioEmbedding builds only a
    ``cascades`` processor (NotImplementedError otherwise) and asserts its config, so anything
    else is refused where kvcli left the towers uncounted with a warning."""
    proc = cfg.get("audio_processor")
    if not isinstance(proc, dict):
        raise InputError(f"must be an object, got {clipped(proc)}: vLLM's Phi-4-multimodal "
                         "builds its audio encoder from it", path=source or None,
                         field="audio_processor")
    if proc.get("name") != "cascades":
        raise InputError(f"expected \"cascades\", got {clipped(proc.get('name'))}: vLLM's "
                         "Phi-4-multimodal builds no other audio encoder", path=source or None,
                         field="audio_processor.name")
    a = proc.get("config")
    if not isinstance(a, dict):     # (vLLM asserts it is there, then reads its keys)
        raise InputError(f"must be an object, got {clipped(a)}: vLLM's Phi-4-multimodal builds "
                         "its audio encoder from it", path=source or None,
                         field="audio_processor.config")
    return a


def _audio(cfg: dict[str, Any], h: int, dtype_bytes: int, source: str) -> TowerPart | None:
    a = _encoder(cfg, source)
    embd = cfg.get("embd_layer", {})
    if not isinstance(embd, dict):      # (vLLM indexes it: embd_layer["audio_embd_layer"])
        raise InputError(f"must be an object, got {clipped(embd)}", path=source or None,
                         field="embd_layer")
    layer = embd.get("audio_embd_layer")
    layer = layer if isinstance(layer, dict) else {}
    nemo = _obj(a, "nemo_conv_settings", "audio_processor.config.nemo_conv_settings", source)
    t5 = _obj(a, "relative_attention_bias_args",
              "audio_processor.config.relative_attention_bias_args", source)
    if (any(a.get(k, v) != v for k, v in _ASSUMED.items()) or t5.get("type") != "t5"
            or set(nemo) - {"conv_channels"}
            or layer.get("use_qformer") or layer.get("use_conv_downsample")
            or layer.get("projection_cls", "linear") not in ("linear", "mlp")):
        return None
    d = config_int(a, "attention_dim", 256, "audio_processor.config.attention_dim", source)
    rate = config_int(layer, "downsample_rate", 1,
                      "embd_layer.audio_embd_layer.downsample_rate", source)
    mlp = d * rate * h + h + h * h + h
    projections = 2 * mlp if layer.get("projection_cls") == "mlp" else d * h + h
    n = _conformer(a, source) + projections
    return TowerPart(("audio",), n, n, dtype_bytes)


def phi4mm_params(cfg: dict[str, Any], text_hidden: int, source: str,
                  dtype_bytes: int) -> VisionParams:
    image, audio = _image(cfg, text_hidden, source), _audio(cfg, text_hidden, dtype_bytes,
                                                            source)
    if audio is None:       # (not modelled: both left uncounted, the warning says so)
        return VisionParams(0, 0)
    parts = (image, audio)
    return VisionParams(image.total + audio.total, image.whole + audio.whole,
                        NAVIT["num_attention_heads"], ("image", "video", "audio"), False, (),
                        parts)
