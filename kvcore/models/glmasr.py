"""GLM-ASR (`GlmAsrForConditionalGeneration`, glmasr.py) as vLLM 0.33 builds it, per TP rank:
its ``text_config`` (transformers' GlmAsrConfig: a Llama) as `LlamaForCausalLM`, and for audio
* `GlmAsrEncoder`, vLLM's own, from the ``audio_config`` (GlmAsrEncoderConfig and its
  defaults): two biased Conv1d (``num_mel_bins`` to ``hidden_size``, then square), the layers
  (two biased LayerNorms, a biased QKVParallelLinear over ``num_attention_heads`` and
  ``num_key_value_heads`` of ``hidden_size`` / heads, a biased o_proj, fc1 and fc2, split over
  TP), a LayerNorm, and its rotary frequencies (a float32 buffer, half the rotary width);
* the projector: a biased column-parallel linear from the encoder's ``intermediate_size`` to
  twice the text model's width, a biased row-parallel one back to it.
The TP size must divide the encoder's key-value heads (vLLM replicates them below; kvcli
refuses that case). No ``--mm-encoder-tp-mode data`` (vLLM falls back). The quant_config
reaches the linears; kvcli lists none. Checked per rank against vLLM's class on the meta device
(tests/data/weights_census/mm_audio2/)."""

from __future__ import annotations

import math
from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.vision_keys import VisionParams, tower_config, vision_dim
from kvcore.models.whisper_audio import conv_stem

ARCH = "GlmAsrForConditionalGeneration"
# GlmAsrEncoderConfig's defaults (transformers 5.20.2; key-value heads: the heads')
DEFAULTS = {"hidden_size": 1280, "intermediate_size": 5120, "num_hidden_layers": 32,
            "num_attention_heads": 20, "num_mel_bins": 128}


def _rotary_floats(a: dict[str, Any], head_dim: int, source: str) -> int:
    """The rotary embedding's inv_freq length: half its width, the head's times the
    ``rope_parameters``' partial_rotary_factor (the config class sets 0.5 where none is
    given)."""
    given = a.get("rope_parameters")
    if given and not isinstance(given, dict):
        # (vLLM's encoder calls its .get where it is truthy)
        raise InputError(f"must be an object, got {clipped(given)}", path=source or None,
                         field="audio_config.rope_parameters")
    rope: dict[str, Any] = given or {}
    where = "rope_parameters." if "partial_rotary_factor" in rope else ""
    factor = rope.get("partial_rotary_factor", a.get("partial_rotary_factor", 0.5))
    # (vLLM's int(head_dim * factor): a string repeats, NaN / inf fail, a negative width or
    # one past the head's cannot be a rotary embedding)
    if (not isinstance(factor, (int, float)) or isinstance(factor, bool)
            or not math.isfinite(factor) or not 0 < factor <= 1):
        raise InputError(f"expected a number in (0, 1], got {clipped(factor)}",
                         path=source or None,
                         field=f"audio_config.{where}partial_rotary_factor")
    width = int(head_dim * factor)
    return (width + 1) // 2


def glmasr_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    a = tower_config(cfg, "audio_config", source)

    def dim(key: str) -> int:
        return vision_dim(a, DEFAULTS, key, source, key_of="audio_config")

    h, inter, n, heads = (dim("hidden_size"), dim("intermediate_size"),
                          dim("num_hidden_layers"), dim("num_attention_heads"))
    kv = vision_dim(a, {"num_key_value_heads": heads}, "num_key_value_heads", source,
                    key_of="audio_config")
    if h % heads:
        raise InputError(f"hidden_size {h} is not a multiple of num_attention_heads {heads}: "
                         "vLLM's encoder attention cannot split it into heads",
                         path=source or None, field="audio_config.num_attention_heads")
    if heads % kv:
        raise InputError(f"num_attention_heads {heads} is not a multiple of it ({kv}): vLLM's "
                         "encoder attention asserts num_heads divisible by num_kv_heads",
                         path=source or None, field="audio_config.num_key_value_heads")
    head_dim = h // heads
    qkv = (heads + 2 * kv) * head_dim
    # (whole: the norms, o_proj's and fc2's biases; split: QKV, o_proj, fc1 and fc2)
    layer_whole, layer_split = 4 * h + 2 * h, h * qkv + qkv + h * h + 2 * h * inter + inter
    whole = conv_stem(dim("num_mel_bins"), h) + n * layer_whole + 2 * h + text_hidden
    split = n * layer_split + inter * 2 * text_hidden + 2 * text_hidden + 2 * text_hidden ** 2
    return VisionParams(whole + split, whole, kv, ("audio",),
                        buffers=_rotary_floats(a, head_dim, source) * 4)
