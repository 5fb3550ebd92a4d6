"""Qwen2-Audio, Qwen2.5-Omni and Qwen3-Omni as vLLM 0.33 serves them: for the omni models the
thinker alone (registry.py maps `Qwen2_5OmniModel`, `Qwen2_5OmniForConditionalGeneration` and
`Qwen3OmniMoeForConditionalGeneration` to their `...ThinkerForConditionalGeneration`, whose
weights mapper drops the talker's and token2wav's weights), read from ``thinker_config``:
* its ``text_config`` is built as `Qwen2ForCausalLM` (Qwen2.5-Omni's ``qwen2_5_omni_text``) or
  Qwen3-MoE's layers (Qwen3-Omni's ``qwen3_omni_moe_text``), so kvcli reads it as ``qwen2`` /
  ``qwen3_moe`` with the omni text class's defaults; its MRoPE keeps get_rope's 4 x positions;
* its towers, each dropped on its own (`TowerPart`): the audio encoder
  (`kvcore.models.whisper_audio`) for ``audio``; for ``image`` and ``video`` Qwen2.5-VL's vision
  tower (`kvcore.models.qwen_vl`) or Qwen3-VL's (`kvcore.models.qwen3_5`) with ``image_size``
  / ``patch_size`` squared position embeddings and the deepstack mergers as ``merger_list``.
Qwen2-Audio's text model is a plain ``qwen2`` ``text_config``; its tower the audio encoder and
projector. None of the three classes declares ``supports_encoder_tp_data``: vLLM falls back to
``--mm-encoder-tp-mode weights``. Checked per rank (tests/data/weights_census/mm_omni/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.qwen3_5 import vision_tower_params
from kvcore.models.qwen_vl import qwen_vl_params, rotary_buffer_bytes
from kvcore.models.vision_keys import TowerPart, VisionParams, tower_config, vision_dim
from kvcore.models.whisper_audio import (
    QWEN2_5_OMNI,
    QWEN2_AUDIO,
    QWEN3_OMNI,
    audio_encoder,
)
from kvcore.specs import DTYPE_BYTES

OMNI = {"Qwen2_5OmniModel": QWEN2_5_OMNI, "Qwen2_5OmniForConditionalGeneration": QWEN2_5_OMNI,
        "Qwen3OmniMoeForConditionalGeneration": QWEN3_OMNI}
AUDIO_ARCHS = (*OMNI, "Qwen2AudioForConditionalGeneration")
# the text config's model type, as the layers vLLM builds it with, and transformers 5.20.2's
# Qwen2_5OmniTextConfig / Qwen3OmniMoeTextConfig defaults for the keys kvcli reads
TEXT_AS = {"qwen2_5_omni_text": "qwen2", "qwen3_omni_moe_text": "qwen3_moe"}
TEXT_DEFAULTS: dict[str, dict[str, Any]] = {
    "qwen2_5_omni_text": {"vocab_size": 152064, "hidden_size": 3584, "intermediate_size": 18944,
                          "num_hidden_layers": 28, "num_attention_heads": 28,
                          "num_key_value_heads": 4, "max_position_embeddings": 32768,
                          "tie_word_embeddings": True, "use_sliding_window": False},
    "qwen3_omni_moe_text": {"vocab_size": 3584, "hidden_size": 2048,
                            "intermediate_size": 18944, "num_hidden_layers": 28,
                            "num_attention_heads": 28, "num_key_value_heads": 4,
                            "max_position_embeddings": 32768, "moe_intermediate_size": 768,
                            "num_experts": 128, "num_experts_per_tok": 8,
                            "decoder_sparse_step": 1, "mlp_only_layers": []}}


def thinker(cfg: dict[str, Any], source: str) -> dict[str, Any]:
    """An omni config's thinker, as the config vLLM's thinker class reads (the top level's
    architectures and quantization_config kept); any other config unchanged."""
    archs = cfg.get("architectures")
    if not (isinstance(archs, list) and archs and archs[0] in OMNI):
        return cfg
    t = cfg.get("thinker_config")
    if not isinstance(t, dict):
        raise InputError(f"{archs[0]} without a 'thinker_config' object: vLLM builds the "
                         "thinker from it", path=source or None, field="thinker_config")
    out = {**t, "architectures": archs}
    for key in ("quantization_config", "torch_dtype", "dtype"):
        if cfg.get(key) is not None and out.get(key) is None:
            out[key] = cfg[key]
    text = tower_config(t, "text_config", source)
    given = text.get("model_type") or ("qwen3_omni_moe_text" if OMNI[archs[0]] == QWEN3_OMNI
                                       else "qwen2_5_omni_text")
    if not isinstance(given, str):      # (looked up in TEXT_AS: a list was unhashable)
        raise InputError(f"must be a string, got {clipped(given)}", path=source or None,
                         field="thinker_config.text_config.model_type")
    if given == "qwen3_omni_moe_text" and text.get("tie_word_embeddings") is None:
        raise InputError("missing 'tie_word_embeddings', which vLLM reads (Qwen3-Omni's text "
                         "config class has no default)", path=source or None,
                         field="thinker_config.text_config.tie_word_embeddings")
    if given in TEXT_AS:
        out["text_config"] = {**TEXT_DEFAULTS[given], **text, "model_type": TEXT_AS[given]}
    return out


def audio_towers(cfg: dict[str, Any], arch: str, hidden: int, source: str,
                 dtype: str) -> VisionParams:
    """Qwen2-Audio's tower, or an omni thinker's audio and vision towers (as `TowerPart`s)."""
    if arch not in OMNI:
        a = audio_encoder(cfg, QWEN2_AUDIO, hidden, source)
        return VisionParams(a.total, a.whole, 0, ("audio",))
    try:
        return _thinker_towers(cfg, OMNI[arch], hidden, source, dtype)
    except InputError as err:
        # (the thinker's keys are under thinker_config in the file: "audio_config.d_model"
        # named a key the file does not have at its top level)
        if err.field is None:
            raise
        raise InputError(err.message, path=err.path, line=err.line,
                         field=f"thinker_config.{err.field}", remedy=err.remedy) from None


def _thinker_towers(cfg: dict[str, Any], kind: str, hidden: int, source: str,
                    dtype: str) -> VisionParams:
    a = audio_encoder(cfg, kind, hidden, source)
    if kind == QWEN2_5_OMNI:
        v = qwen_vl_params(cfg, "Qwen2_5_VLForConditionalGeneration", source)
        rotary = rotary_buffer_bytes(cfg, "Qwen2_5_VLForConditionalGeneration",
                                     DTYPE_BYTES[dtype])
    else:
        v, rotary = _qwen3_omni_vision(cfg, source, DTYPE_BYTES[dtype])
    parts = (TowerPart(("audio",), a.total, a.whole, a.buffers, (a.heads, a.split_unless)),
             TowerPart(("image", "video"), v.total, v.whole, rotary))
    return v._replace(total=a.total + v.total, whole=a.whole + v.whole,
                      modalities=("audio", "image", "video"), data_parallel=False, parts=parts)


def _qwen3_omni_vision(cfg: dict[str, Any], source: str,
                       dtype_bytes: int) -> tuple[VisionParams, int]:
    """Qwen3-Omni's vision tower (Qwen3-VL's, its position table (image_size / patch_size)^2,
    no ``num_position_embeddings``; ``image_size`` and ``apply_vit_abs_pos_embed`` have no
    default: vLLM cannot build it without) and its rotary cache (8,192 x half the head dim)."""
    v = tower_config(cfg, "vision_config", source)
    for key in ("image_size", "apply_vit_abs_pos_embed"):
        if v.get(key) is None:
            raise InputError(f"missing '{key}', which vLLM's Qwen3-Omni vision tower reads "
                             "(its config class has no default)", path=source or None,
                             field=f"vision_config.{key}")
    defaults = {"image_size": 0, "patch_size": 16, "hidden_size": 1152, "num_heads": 16}

    def dim(key: str) -> int:
        return vision_dim(v, defaults, key, source, listed=key == "patch_size")

    grid = dim("image_size") // dim("patch_size")
    if grid < 1:
        raise InputError(f"image_size {dim('image_size')} is below patch_size "
                         f"{dim('patch_size')}: no position embedding", path=source or None,
                         field="vision_config.image_size")
    p = vision_tower_params({"vision_config": {**v, "num_position_embeddings": grid * grid}},
                            source, qwen3_vl=True)
    # (built in another order than Qwen3-VL's: the blocks, then the merger and merger_list, so
    # that a refusal names the first block's linear, as vLLM's does)
    lins = tuple(sorted((lin._replace(path=lin.path.replace("deepstack_merger_list",
                                                            "merger_list"))
                         for lin in p.linears), key=lambda lin: ".blocks." not in lin.path))
    rotary = 8192 * (dim("hidden_size") // dim("num_heads") // 2) * dtype_bytes
    return p._replace(linears=lins), rotary
