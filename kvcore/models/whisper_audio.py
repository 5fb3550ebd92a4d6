"""The Whisper-style audio encoders vLLM 0.33 builds beside the Qwen audio and omni models'
language models (their parameters and buffers, per TP rank of the first stage):
* Qwen2-Audio (`Qwen2AudioForConditionalGeneration`, qwen2_audio.py): transformers'
  `Qwen2AudioEncoder` (two Conv1d, a learned position table ``max_source_positions`` x
  ``d_model``, ``encoder_layers`` Whisper layers, a LayerNorm) and the projector, a biased
  `nn.Linear` to the text model's width: all plain torch modules, whole on every TP rank.
* Qwen2.5-Omni's thinker (qwen2_5_omni_thinker.py): transformers' `Qwen2_5OmniAudioEncoder`:
  the two Conv1d, sinusoidal positions (a float32 buffer ``max_source_positions`` x
  ``d_model``), the layers, ``audio_bos_eos_token`` (2 x ``output_dim``), ``ln_post`` and
  ``proj`` to ``output_dim``: whole on every rank too.
* Qwen3-Omni's thinker (qwen3_omni_moe_thinker.py `Qwen3OmniMoeAudioEncoder`, vLLM's own): three
  Conv2d over ``downsample_hidden_size`` channels, ``conv_out`` (no bias), the layers with a
  biased QKVParallelLinear, out_proj, fc1 and fc2 split over TP where the TP size divides
  ``encoder_attention_heads`` (else whole: `disable_tp`, "e.g. TP=8" for 20 heads), ``ln_post``,
  ``proj1`` and ``proj2`` (replicated); the same float32 sinusoid buffer.
* Voxtral's (voxtral.py): vLLM's own `WhisperEncoder` (`kvcore.models.voxtral`).
* MiniCPM-o's (minicpmo.py `MiniCPMWhisperEncoder`): transformers' `WhisperEncoder` (the two
  Conv1d, the learned positions, the layers, a LayerNorm), whole on every rank, its
  projection apart (`kvcore.models.minicpmo`).
A Whisper layer: two biased LayerNorms, q, k, v and out projections (k without a bias in
transformers' encoders), a biased fc1 and fc2. None is built with the quant_config.
Checked per rank against vLLM's classes on the meta device (tests/data/weights_census/mm_omni/).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kvcore.models.vision_keys import tower_config, vision_dim

# transformers 5.20.2's Qwen2AudioEncoderConfig, Qwen2_5OmniAudioEncoderConfig and
# Qwen3OmniMoeAudioEncoderConfig defaults (output_dim: the omni classes')
AUDIO_DEFAULTS = {"d_model": 1280, "encoder_layers": 32, "encoder_attention_heads": 20,
                  "encoder_ffn_dim": 5120, "num_mel_bins": 128, "max_source_positions": 1500,
                  "output_dim": 3584, "downsample_hidden_size": 480}
# transformers 5.20.2's WhisperConfig defaults (MiniCPM-o's audio_config)
WHISPER_DEFAULTS = {"d_model": 384, "encoder_layers": 4, "encoder_attention_heads": 6,
                    "encoder_ffn_dim": 1536, "num_mel_bins": 80, "max_source_positions": 1500}
QWEN2_AUDIO, QWEN2_5_OMNI, QWEN3_OMNI = "qwen2_audio", "qwen2_5_omni", "qwen3_omni"
WHISPER = "whisper"


class AudioEncoder(NamedTuple):
    """An audio encoder's parameters (all; whole on every rank; ``split_unless``: those split
    over TP only where the TP size divides ``heads``, whole otherwise) and buffer bytes."""
    total: int
    whole: int
    heads: int
    split_unless: int
    buffers: int


def whisper_layer(d: int, ffn: int, *, k_bias: bool) -> tuple[int, int]:
    """(whole, rest) parameters of one Whisper encoder layer `d` wide, `ffn` in its MLP: its
    norms and the biases of its row-parallel out_proj and fc2 (whole wherever it splits), then
    q, k, v (k biased in vLLM's own QKV only: `k_bias`), out_proj, fc1 and fc2."""
    return 4 * d + 2 * d, 4 * d * d + 2 * d + 2 * d * ffn + ffn + (d if k_bias else 0)


def conv_stem(mel: int, d: int) -> int:
    """The parameters of the two biased Conv1d (kernel 3) from `mel` bins to `d` wide."""
    return mel * d * 3 + d + d * d * 3 + d


def audio_encoder(cfg: dict[str, Any], kind: str, text_hidden: int,
                  source: str) -> AudioEncoder:
    """The audio encoder (with Qwen2-Audio's projector) of a config's ``audio_config``."""
    a = tower_config(cfg, "audio_config", source)
    defaults = WHISPER_DEFAULTS if kind == WHISPER else AUDIO_DEFAULTS

    def dim(key: str) -> int:
        return vision_dim(a, defaults, key, source, key_of="audio_config")

    d, ffn, n = dim("d_model"), dim("encoder_ffn_dim"), dim("encoder_layers")
    heads, mel, positions = dim("encoder_attention_heads"), dim("num_mel_bins"), dim(
        "max_source_positions")
    layer_whole, layer_rest = whisper_layer(d, ffn, k_bias=kind == QWEN3_OMNI)
    sinusoid = positions * d * 4        # (float32 whatever the model dtype)
    if kind == QWEN3_OMNI:
        ch, out = dim("downsample_hidden_size"), dim("output_dim")
        freq = (((mel + 1) // 2 + 1) // 2 + 1) // 2
        whole = (ch * 9 + ch + 2 * (ch * ch * 9 + ch) + ch * freq * d + n * layer_whole
                 + 2 * d + d * d + d + d * out + out)
        return AudioEncoder(whole + n * layer_rest, whole, heads, n * layer_rest, sinusoid)
    convs = conv_stem(mel, d)
    if kind in (QWEN2_AUDIO, WHISPER):
        # the learned positions, the final LayerNorm (Qwen2-Audio's projector to the text model)
        head = positions * d + 2 * d
        if kind == QWEN2_AUDIO:
            head += d * text_hidden + text_hidden
        total = convs + n * (layer_whole + layer_rest) + head
        return AudioEncoder(total, total, 0, 0, 0)
    out = dim("output_dim")
    # audio_bos_eos_token, ln_post, proj
    total = convs + n * (layer_whole + layer_rest) + 2 * out + 2 * d + d * out + out
    return AudioEncoder(total, total, 0, 0, sinusoid)
