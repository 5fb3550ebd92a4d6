"""MOSS-Transcribe-Diarize's audio tower (`MossTranscribeDiarizeForConditionalGeneration`,
moss_transcribe_diarize.py) as vLLM 0.33 builds it beside its Qwen3 language model:

* ``whisper_encoder``: vLLM's own `WhisperEncoder` on the ``audio_config`` (a WhisperConfig:
  its defaults where a key is missing): the two Conv1d, the layers (q/k/v fused in a biased
  QKVParallelLinear, out_proj, fc1 and fc2 split over TP), the final LayerNorm and the learned
  position table ``max_source_positions`` x ``d_model``, in the model dtype;
* ``vq_adaptor``: plain torch modules, whole on every rank: a biased nn.Linear from
  ``adaptor_input_dim`` to the text model's width, a biased square one, a biased LayerNorm.

Found by tests/data/size_fuzz (seed 2, s2-0129 and s2-0203: kvcli counted the text model
alone); checked there against vLLM's class built on the meta device."""

from __future__ import annotations

from typing import Any

from kvcore.models.vision_keys import VisionParams, config_int, tower_config, vision_dim
from kvcore.models.whisper_audio import WHISPER_DEFAULTS, conv_stem, whisper_layer

ARCH = "MossTranscribeDiarizeForConditionalGeneration"
# (the adaptor's input width: the class reads the key as it is, no default)
ADAPTOR_KEY = "adaptor_input_dim"


def moss_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    """The Whisper encoder and the VQ adaptor of a MOSS-Transcribe-Diarize config whose text
    model is `text_hidden` wide."""
    a = tower_config(cfg, "audio_config", source)

    def dim(key: str) -> int:
        return vision_dim(a, WHISPER_DEFAULTS, key, source, key_of="audio_config")

    d, ffn, n = dim("d_model"), dim("encoder_ffn_dim"), dim("encoder_layers")
    heads, mel = dim("encoder_attention_heads"), dim("num_mel_bins")
    positions = dim("max_source_positions")
    layer_whole, layer_rest = whisper_layer(d, ffn, k_bias=True)
    adaptor_in = config_int(cfg, ADAPTOR_KEY, None, ADAPTOR_KEY, source)
    h = text_hidden
    adaptor = adaptor_in * h + h + h * h + h + 2 * h
    whole = conv_stem(mel, d) + n * layer_whole + 2 * d + positions * d + adaptor
    return VisionParams(whole + n * layer_rest, whole, heads, ("audio",))
