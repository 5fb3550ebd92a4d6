"""Voxtral (`VoxtralForConditionalGeneration`, voxtral.py) from a Hugging Face config.json, as
vLLM 0.33 builds it, per TP rank.

* Its ``audio_config`` (transformers' VoxtralEncoderConfig) has no ``downsample_factor``, which
  the class reads before it builds anything: vLLM refuses such a config, whatever the TP size
  or multimodal options. vLLM serves the published Voxtral checkpoints from their mistral
  ``params.json`` (``--config-format mistral``), which kvcli does not read.
* An audio_config giving it (and ``window_size``, ``sampling_rate``, read once the encoder is
  built) builds, for audio: vLLM's own `WhisperEncoder` (two Conv1d, the layers with a biased
  QKVParallelLinear, out_proj, fc1 and fc2 split over TP, whose size must divide
  ``encoder_attention_heads``, a LayerNorm), its position table ``max_source_positions`` x
  ``d_model`` made in float32 whatever the model dtype (``init_in_fp32``), the mel filter bank
  a float32 buffer (1 + ``window_size`` // 2) x ``num_mel_bins``, and the adapter: two plain
  bias-free nn.Linear, ``d_model`` x ``downsample_factor`` to the text model's width, then
  square (whole on every rank). No ``--mm-encoder-tp-mode data`` (vLLM falls back).
* ``is_causal`` builds another encoder (`WhisperCausalEncoder`): left uncounted with the
  uncounted-tower warning.
The quant_config reaches the encoder's linears (`_linears`: fp8 with their scales,
`kvcore.models.fp8_vision`; packed under AWQ, GPTQ and compressed-tensors,
`kvcore.models.tower_int_quant`), not the adapter's. Checked per rank against vLLM's class on
the meta device (tests/data/weights_census/mm_audio/; quantised: quant_voxtral/)."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError
from kvcore.models.vision_keys import (
    VisionLinear,
    VisionParams,
    config_int,
    tower_config,
    vision_dim,
)
from kvcore.models.whisper_audio import AUDIO_DEFAULTS, conv_stem, whisper_layer

# VoxtralEncoderConfig's keys for the Whisper names vLLM reads (its attribute_map; an alias
# given in config.json lands on the key)
KEYS = {"d_model": "hidden_size", "encoder_layers": "num_hidden_layers",
        "encoder_attention_heads": "num_attention_heads", "encoder_ffn_dim": "intermediate_size",
        "num_mel_bins": "num_mel_bins", "max_source_positions": "max_source_positions"}


def _missing(key: str, source: str) -> InputError:
    return InputError(f"'VoxtralEncoderConfig' object has no attribute '{key}': vLLM cannot "
                      "build VoxtralForConditionalGeneration from a Hugging Face config.json "
                      "without it (it serves Voxtral from the checkpoint's mistral params.json, "
                      "--config-format mistral, which kvcli does not read)",
                      path=source or None, field=f"audio_config.{key}")


def voxtral_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    a = tower_config(cfg, "audio_config", source)
    if a.get("downsample_factor") is None:
        raise _missing("downsample_factor", source)
    factor = config_int(a, "downsample_factor", None, "audio_config.downsample_factor", source)
    if a.get("is_causal"):
        return VisionParams(0, 0)
    given = {alias: a[key] if a.get(key) is not None else a.get(alias)
             for alias, key in KEYS.items()}

    def dim(alias: str) -> int:
        return vision_dim({KEYS[alias]: given[alias]}, {KEYS[alias]: AUDIO_DEFAULTS[alias]},
                          KEYS[alias], source, key_of="audio_config")

    d, ffn, n = dim("d_model"), dim("encoder_ffn_dim"), dim("encoder_layers")
    heads, mel, positions = (dim("encoder_attention_heads"), dim("num_mel_bins"),
                             dim("max_source_positions"))
    if d % heads:
        raise InputError(f"embed_dim must be divisible by num_heads (got `embed_dim`: {d} and "
                         f"`num_heads`: {heads}).", path=source or None,
                         field="audio_config.num_attention_heads")
    for key in ("window_size", "sampling_rate"):
        if a.get(key) is None:
            raise _missing(key, source)
    window = config_int(a, "window_size", None, "audio_config.window_size", source)
    layer_whole, layer_rest = whisper_layer(d, ffn, k_bias=True)
    adapter = d * factor * text_hidden + text_hidden * text_hidden
    whole = conv_stem(mel, d) + n * layer_whole + 2 * d + adapter
    # (the position table in float32, beside the rest)
    return VisionParams(whole + n * layer_rest, whole, heads, ("audio",),
                        buffers=(1 + window // 2) * mel * 4, fp32=positions * d,
                        linears=_linears(n, d, ffn))


def _linears(layers: int, d: int, ffn: int) -> tuple[VisionLinear, ...]:
    """The encoder layers' linears, built with the quant_config (vLLM's own WhisperEncoder
    under ``whisper_encoder``: q/k/v fused), at the prefixes vLLM gives them, which its words
    name and its ignore lists match (make_layers' ``layers.N.layers.``; their parameters
    hang at ``layers.N.``)."""
    out: list[VisionLinear] = []
    for i in range(layers):
        at = f"whisper_encoder.whisper_encoder.layers.{i}.layers"
        out += [VisionLinear(f"{at}.self_attn.qkv_proj", (d, d, d), d, "column",
                             ("q_proj", "k_proj", "v_proj")),
                VisionLinear(f"{at}.self_attn.out_proj", (d,), d, "row"),
                VisionLinear(f"{at}.mlp.fc1", (ffn,), d, "column"),
                VisionLinear(f"{at}.mlp.fc2", (d,), ffn, "row")]
    return tuple(out)
