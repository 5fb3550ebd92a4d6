"""Ultravox (`UltravoxModel`, ultravox.py) from a config.json, as vLLM 0.33 builds it, per TP
rank.

* Its language model is the ``text_config`` (vLLM's `UltravoxConfig` builds it as
  ``wrapped_model_config``, a Llama without a ``model_type``). The published checkpoints name
  it by ``text_model_id`` instead (and the Whisper encoder by ``audio_model_id``), whose config
  vLLM fetches from the Hub: kvcli reads the file alone and refuses such a config in one line
  (`hub_ids_refusal`).
* Its audio tower: `UltravoxWhisperEncoder`, vLLM's own `WhisperEncoder` (two Conv1d, the
  layers with a biased QKVParallelLinear, out_proj, fc1 and fc2 split over TP, whose size must
  divide ``encoder_attention_heads``, a LayerNorm) with its sinusoidal position table in the
  model dtype, from the ``audio_config`` (transformers' WhisperConfig and its defaults).
* Its projector (whole on every rank): with ``num_projector_layers`` 0 (the default) the feed
  forward one: an RMSNorm over ``d_model`` x ``stack_factor``, bias-free linears to the root
  ``hidden_size`` and from it (halved by ``swiglu``) to the text model's width, an RMSNorm
  after the first (``projector_ln_mid``) or the second; else the transformer one: an RMSNorm,
  a biased linear to ``d_model``, a learned position table, that many Whisper layers (split over
  TP as the encoder's), an RMSNorm and a biased linear to the text model's width.
No ``--mm-encoder-tp-mode data`` (vLLM falls back). The quant_config reaches the linears; kvcli
lists none. Checked per rank against vLLM's class on the meta device
(tests/data/weights_census/mm_audio2/)."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError
from kvcore.models.act_names import checked_act
from kvcore.models.vision_keys import VisionParams, config_int, tower_config, vision_dim
from kvcore.models.whisper_audio import WHISPER_DEFAULTS, conv_stem, whisper_layer

ARCH = "UltravoxModel"
# UltravoxConfig's defaults for the root keys the projector reads
ROOT_DEFAULTS: dict[str, int] = {"hidden_size": 4096, "stack_factor": 8, "num_projector_layers": 0}
# WhisperConfig's attribute_map: a config.json giving hidden_size or the like sets d_model
ALIASES = {"d_model": "hidden_size", "encoder_layers": "num_hidden_layers",
           "encoder_attention_heads": "num_attention_heads"}


def hub_ids_refusal(cfg: dict[str, Any], source: str) -> None:
    """Refuses an Ultravox config whose language model is named by ``text_model_id`` (or whose
    encoder by ``audio_model_id``) rather than given: vLLM reads that model's config from the
    Hub, kvcli the file alone."""
    archs = cfg.get("architectures")
    if not (isinstance(archs, list) and archs and archs[0] == ARCH):
        return
    for key, given in (("text_model_id", "text_config"), ("audio_model_id", "audio_config")):
        if cfg.get(key) is not None:
            raise InputError(f"{ARCH} names its {given.split('_')[0]} model by {key} "
                             f"{cfg[key]!r}, whose config vLLM fetches from the Hub: kvcli "
                             f"reads only this file (write that config.json under "
                             f"'{given}' and {key} null)", path=source or None, field=key)


def ultravox_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    """The Whisper encoder and projector of an Ultravox config (`hub_ids_refusal` first)."""
    hub_ids_refusal(cfg, source)
    a = tower_config(cfg, "audio_config", source)
    given = {key: a[key] if a.get(key) is not None else a.get(ALIASES.get(key, key))
             for key in WHISPER_DEFAULTS}

    def dim(key: str) -> int:
        return vision_dim(given, WHISPER_DEFAULTS, key, source, key_of="audio_config")

    def root(key: str, least: int = 1) -> int:
        return config_int(cfg, key, ROOT_DEFAULTS[key], key, source, least)

    d, ffn, n = dim("d_model"), dim("encoder_ffn_dim"), dim("encoder_layers")
    heads, mel, positions = (dim("encoder_attention_heads"), dim("num_mel_bins"),
                             dim("max_source_positions"))
    if d % heads:
        raise InputError(f"embed_dim must be divisible by num_heads (got `embed_dim`: {d} and "
                         f"`num_heads`: {heads}).", path=source or None,
                         field="audio_config.encoder_attention_heads")
    layer_whole, layer_rest = whisper_layer(d, ffn, k_bias=True)
    stacked, layers = d * root("stack_factor"), root("num_projector_layers", 0)
    # the encoder's convolutions, positions, layers' norms and biases, final LayerNorm
    whole = conv_stem(mel, d) + positions * d + n * layer_whole + 2 * d
    if layers:
        whole += (stacked + stacked * d + d + positions * d + layers * layer_whole + d
                  + d * text_hidden + text_hidden)
    else:
        hidden = root("hidden_size")
        act = cfg.get("projector_act", "swiglu")
        # (vLLM builds MulAndSilu for "swiglu" exactly, else get_act_fn's, which fails on a
        # name it does not know)
        if act != "swiglu":
            checked_act(act, "projector_act", source)
        mid = hidden // 2 if act == "swiglu" else hidden
        norm = mid if cfg.get("projector_ln_mid") else text_hidden
        whole += stacked + stacked * hidden + mid * text_hidden + norm
    split = (n + layers) * layer_rest
    return VisionParams(whole + split, whole, heads, ("audio",))
