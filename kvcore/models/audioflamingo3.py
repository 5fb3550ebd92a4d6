"""Audio Flamingo 3 (`AudioFlamingo3ForConditionalGeneration`, audioflamingo3.py) as vLLM 0.33
builds it, per TP rank: its ``text_config`` (transformers' AudioFlamingo3Config: a Qwen2) as
the language model, and for audio
* `AudioFlamingo3Encoder`, transformers' `Qwen2AudioEncoder` (two Conv1d, a learned position
  table ``max_source_positions`` x ``hidden_size``, ``num_hidden_layers`` Whisper layers, a
  LayerNorm; its average pooling has no weights) from the ``audio_config``
  (AudioFlamingo3EncoderConfig: its defaults, Whisper's names given in config.json land on its
  own by the class's attribute_map);
* the projector: two plain nn.Linear, the encoder's width to the text model's, then square,
  biased unless ``projector_bias`` is false.
All plain torch modules, whole on every TP rank, built in the model dtype without the
quant_config. No ``--mm-encoder-tp-mode data`` (vLLM falls back). Checked per rank against
vLLM's class on the meta device (tests/data/weights_census/mm_audio2/)."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.act_names import checked_act
from kvcore.models.vision_keys import VisionParams, tower_config, vision_dim
from kvcore.models.whisper_audio import conv_stem, whisper_layer

ARCH = "AudioFlamingo3ForConditionalGeneration"
# AudioFlamingo3EncoderConfig's defaults (transformers 5.20.2)
DEFAULTS = {"hidden_size": 1280, "num_hidden_layers": 32, "num_attention_heads": 20,
            "intermediate_size": 5120, "num_mel_bins": 128, "max_source_positions": 1500}
# its attribute_map: Whisper's names for its keys
ALIASES = {"hidden_size": "d_model", "num_hidden_layers": "encoder_layers",
           "num_attention_heads": "encoder_attention_heads",
           "intermediate_size": "encoder_ffn_dim"}


def audioflamingo3_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    a = tower_config(cfg, "audio_config", source)
    given = {key: a[key] if a.get(key) is not None else a.get(ALIASES.get(key, key))
             for key in DEFAULTS}

    def dim(key: str) -> int:
        return vision_dim(given, DEFAULTS, key, source, key_of="audio_config")

    d, ffn, n = dim("hidden_size"), dim("intermediate_size"), dim("num_hidden_layers")
    heads = dim("num_attention_heads")
    if d % heads:       # (transformers' Whisper attention refuses it)
        raise InputError(f"embed_dim must be divisible by num_heads (got `embed_dim`: {d} and "
                         f"`num_heads`: {heads}).", path=source or None,
                         field="audio_config.num_attention_heads")
    bias = cfg.get("projector_bias", True)
    if not isinstance(bias, bool):
        raise InputError(f"expected true or false, got {clipped(bias)}", path=source or None,
                         field="projector_bias")
    # (the projector's act is get_act_fn's: a name it does not know fails there)
    checked_act(cfg.get("projector_hidden_act", "gelu"), "projector_hidden_act", source)
    layer_whole, layer_rest = whisper_layer(d, ffn, k_bias=False)
    encoder = (conv_stem(dim("num_mel_bins"), d) + dim("max_source_positions") * d
               + n * (layer_whole + layer_rest) + 2 * d)
    projector = d * text_hidden + text_hidden * text_hidden + (2 * text_hidden if bias else 0)
    total = encoder + projector
    return VisionParams(total, total, 0, ("audio",))
