"""Qwen3-ASR (`Qwen3ASRForConditionalGeneration`, qwen3_asr.py) as vLLM 0.33 builds it from
vLLM's own `Qwen3ASRConfig` (transformers_utils/configs/qwen3_asr.py), per TP rank:
* the config's ``thinker_config`` (absent: built from the top level's ``audio_config``,
  ``text_config`` and ``audio_token_id``; the class's defaults for what neither gives) holds
  both models, which is all vLLM builds (its weights mapper drops a talker's);
* its ``text_config`` (`Qwen3ASRTextConfig`, whatever ``model_type`` it names) is built as
  `Qwen3ForCausalLM`: kvcli reads it as ``qwen3`` with that class's defaults; the wrapper's own
  ``tie_word_embeddings``, where the file gives one, is copied over the text config's
  (`VllmConfig.with_hf_config`; the class has no default);
* its ``audio_config`` (`Qwen3ASRAudioEncoderConfig`, the defaults Qwen3-Omni's encoder has)
  builds Qwen3-Omni's audio encoder (`kvcore.models.whisper_audio`), whose linears split over
  TP only where the TP size divides ``encoder_attention_heads`` (whole otherwise).
No ``--mm-encoder-tp-mode data`` (vLLM falls back). Checked per rank against vLLM's class on
the meta device (tests/data/weights_census/mm_audio2/)."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError
from kvcore.models.vision_keys import VisionParams, tower_config
from kvcore.models.whisper_audio import QWEN3_OMNI, audio_encoder

ARCH = "Qwen3ASRForConditionalGeneration"
# (qwen3_asr_realtime.py's class subclasses it: the same thinker and audio tower, streamed)
REALTIME = "Qwen3ASRRealtimeGeneration"
# Qwen3ASRTextConfig's defaults for the keys kvcli reads (num_key_value_heads: the heads')
TEXT_DEFAULTS: dict[str, Any] = {
    "vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 22016,
    "num_hidden_layers": 32, "num_attention_heads": 32, "head_dim": 128,
    "max_position_embeddings": 128000, "tie_word_embeddings": False, "rope_theta": 5000000.0}
# what Qwen3ASRConfig folds into the thinker where the file has no thinker_config
FOLDED = ("audio_config", "text_config", "audio_token_id")


def _is_asr(cfg: dict[str, Any]) -> bool:
    archs = cfg.get("architectures")
    return isinstance(archs, list) and bool(archs) and archs[0] in (ARCH, REALTIME)


def asr_thinker(cfg: dict[str, Any], source: str) -> dict[str, Any]:
    """A Qwen3-ASR config's thinker, as the config vLLM's class reads (the top level's
    architectures, dtype and quantization_config kept), its text config read as ``qwen3``;
    any other config unchanged."""
    if not _is_asr(cfg):
        return cfg
    given = cfg.get("thinker_config")
    if given is not None and not isinstance(given, dict):
        raise InputError("must be an object (or null): Qwen3ASRConfig builds its thinker from "
                         "it", path=source or None, field="thinker_config")
    t = given if given is not None else {k: cfg[k] for k in FOLDED if cfg.get(k) is not None}
    out = {**t, "architectures": cfg["architectures"]}
    if given is not None:       # (kept to say where a refused key is: `qwen3_asr_params`)
        out["thinker_config"] = given
    for key in ("quantization_config", "torch_dtype", "dtype"):
        if cfg.get(key) is not None and out.get(key) is None:
            out[key] = cfg[key]
    where = "thinker_config.text_config" if given is not None else "text_config"
    try:
        text = tower_config(t, "text_config", source)
    except InputError as err:
        raise InputError(err.message, path=err.path, field=where) from None
    text = {**TEXT_DEFAULTS, **text, "model_type": "qwen3"}
    if text.get("num_key_value_heads") is None:
        text["num_key_value_heads"] = text["num_attention_heads"]
    if cfg.get("tie_word_embeddings") is not None:
        text["tie_word_embeddings"] = cfg["tie_word_embeddings"]
    out["text_config"] = text
    return out


def qwen3_asr_params(cfg: dict[str, Any], hidden: int, source: str) -> VisionParams:
    """The audio encoder of a Qwen3-ASR thinker `cfg` (`asr_thinker`; a refusal names the key
    under ``thinker_config`` where the file has one)."""
    try:
        a = audio_encoder(cfg, QWEN3_OMNI, hidden, source)
    except InputError as err:
        if err.field is None or "thinker_config" not in cfg:
            raise
        raise InputError(err.message, path=err.path, line=err.line,
                         field=f"thinker_config.{err.field}", remedy=err.remedy) from None
    return VisionParams(a.total, a.whole, 0, ("audio",), buffers=a.buffers,
                        head_bound=(a.heads, a.split_unless))
