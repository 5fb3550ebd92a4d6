"""Granite Speech (`GraniteSpeechForConditionalGeneration`, granite_speech.py; and Plus,
granite_speech_plus.py, the same modules built, its config class the same defaults) as vLLM 0.33
builds it, per TP rank: its ``text_config`` (a Granite) as the language model (built plain: the
checkpoint's LoRA adapter, ``has_lora_adapter``, is served only under ``--enable-lora``), and
for audio
* `GraniteSpeechCTCEncoder` from the ``encoder_config`` (GraniteSpeechEncoderConfig and its
  defaults, its attribute_map's names landing on its own): a biased ``input_dim`` to
  ``hidden_dim`` linear, ``num_layers`` conformer blocks (two feed-forward modules whose biased
  up_proj and down_proj split over TP, the down_proj's bias whole; Shaw attention with plain
  linears and a relative position table (2 ``max_pos_emb`` + 1) x ``dim_head``; the
  convolution module with a BatchNorm1d, whose running statistics are buffers; a LayerNorm),
  and the mid-point CTC head (``out``, ``out_mid``: split);
* the projector: its ``query`` (``window_size`` // ``downsample_rate`` x the Q-Former's width),
  vLLM's `Blip2QFormerModel` from the ``projector_config`` (Blip2QFormerConfig's defaults: a
  LayerNorm, then each layer's self-attention, a cross-attention over ``encoder_hidden_size``
  on the layers ``cross_attention_frequency`` divides, the query feed-forward; plain biased
  linears and LayerNorms) and a biased linear to the text model's width: all whole.
The TP size must divide ``output_dim`` (vLLM asserts it, the tower dropped or not). No
``--mm-encoder-tp-mode data`` (vLLM falls back). Checked per rank against vLLM's class on the
meta device (tests/data/weights_census/mm_audio2/)."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError
from kvcore.models.vision_keys import VisionParams, config_int, tower_config, vision_dim

# (Granite Speech Plus: the same modules, its encoder concatenating ``cat_hidden_layers``'
# states in its forward alone)
ARCHS = ("GraniteSpeechForConditionalGeneration", "GraniteSpeechPlusForConditionalGeneration")
ENCODER = {"input_dim": 160, "num_layers": 10, "hidden_dim": 1024, "feedforward_mult": 4,
           "num_heads": 8, "output_dim": 42, "max_pos_emb": 512, "conv_kernel_size": 15,
           "conv_expansion_factor": 2}
ENCODER_ALIASES = {"hidden_dim": "hidden_size", "num_layers": "num_hidden_layers",
                   "num_heads": "num_attention_heads", "input_dim": "num_mel_bins"}
QFORMER = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
           "intermediate_size": 3072, "cross_attention_frequency": 2,
           "encoder_hidden_size": 1408}
ROOT = {"downsample_rate": 5, "window_size": 15}


def _conformer_block(h: int, mult: int, heads_x_dim: int, dim_head: int, max_pos: int,
                     kernel: int, inner: int) -> tuple[int, int]:
    """(whole, split) parameters of one conformer block."""
    ff_whole, ff_split = 2 * h + h, h * h * mult * 2 + h * mult
    attn = 2 * h + 3 * h * heads_x_dim + heads_x_dim * h + h + (2 * max_pos + 1) * dim_head
    conv = 2 * h + h * 2 * inner + 2 * inner + inner * kernel + 2 * inner + inner * h + h
    return 2 * ff_whole + attn + conv + 2 * h, 2 * ff_split


def _qformer(q: dict[str, Any], source: str) -> int:
    def dim(key: str) -> int:
        return vision_dim(q, QFORMER, key, source, key_of="projector_config")

    d, inter, n, enc = (dim("hidden_size"), dim("intermediate_size"), dim("num_hidden_layers"),
                        dim("encoder_hidden_size"))
    if d % dim("num_attention_heads"):
        raise InputError(f"The hidden size ({d}) is not a multiple of the number of attention "
                         f"heads ({dim('num_attention_heads')})", path=source or None,
                         field="projector_config.num_attention_heads")
    freq = dim("cross_attention_frequency")
    attention = 4 * (d * d + d) + 2 * d
    cross = 2 * (d * d + d) + 2 * (enc * d + d) + 2 * d
    layer = attention + d * inter + inter + inter * d + d + 2 * d
    return 2 * d + n * layer + sum(cross for i in range(n) if i % freq == 0)


def granite_speech_params(cfg: dict[str, Any], text_hidden: int, source: str,
                          dtype_bytes: int) -> VisionParams:
    e = tower_config(cfg, "encoder_config", source)
    given = {k: e[k] if e.get(k) is not None else e.get(ENCODER_ALIASES.get(k, k))
             for k in ENCODER}

    def dim(key: str) -> int:
        return vision_dim(given, ENCODER, key, source, key_of="encoder_config")

    h, n, heads, out = dim("hidden_dim"), dim("num_layers"), dim("num_heads"), dim("output_dim")
    dim_head = (h // heads if e.get("dim_head") is None
                else config_int(e, "dim_head", None, "encoder_config.dim_head", source))
    inner = h * dim("conv_expansion_factor")
    block_whole, block_split = _conformer_block(h, dim("feedforward_mult"), heads * dim_head,
                                                dim_head, dim("max_pos_emb"),
                                                dim("conv_kernel_size"), inner)
    q = tower_config(cfg, "projector_config", source)
    q_width = vision_dim(q, QFORMER, "hidden_size", source, key_of="projector_config")
    queries = (config_int(cfg, "window_size", ROOT["window_size"], "window_size", source)
               // config_int(cfg, "downsample_rate", ROOT["downsample_rate"], "downsample_rate",
                             source))
    whole = (dim("input_dim") * h + h + n * block_whole + h + queries * q_width
             + _qformer(q, source) + q_width * text_hidden + text_hidden)
    split = n * block_split + h * out + out + out * h
    # (each BatchNorm1d's running mean and variance in the model dtype, its int64 step count)
    buffers = n * (2 * inner * dtype_bytes + 8)
    # (the CTC head's output_dim: TP must divide it, as vLLM's parallel linears assert)
    return VisionParams(whole + split, whole, 0, ("audio",), mlp_width=out, buffers=buffers)
