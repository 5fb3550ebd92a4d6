"""Which part of a config.json holds the text model vLLM 0.33 builds: a multimodal wrapper's
``text_config`` (or a remote-code config's ``llm_config``, which vLLM renames so), with what
vLLM carries into it from the wrapper, else the config itself (`kvcore.models.hf_config`); and
the name kvcli gives a model: the file's own ``_name_or_path``, else its model_type, the
wrapper's where there is one (a refusal said "qwen2's 14 attention heads" of InternVL3-1B, the
text model's type, where every other line names the file's model)."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.alpamayo import vlm_unwrapped
from kvcore.models.backend_padding import refuse_padding_idx
from kvcore.models.class_tie import class_tie
from kvcore.models.config_aliases import canonical
from kvcore.models.deepseek_vl2 import LANGUAGE_CONFIG_ARCHS, language_as_text
from kvcore.models.domyn_edge import domyn_windowed
from kvcore.models.dtypes import dtype_names, wrapper_dtype
from kvcore.models.interns1_pro import as_built
from kvcore.models.internvl_chat import awq_patched
from kvcore.models.iquest_loop import iquest_windowed
from kvcore.models.longcat_ngram import typed
from kvcore.models.midashenglm import qwen2_text
from kvcore.models.molmo import MOLMO, molmo_text
from kvcore.models.molmo2 import is_molmo2, molmo2_text
from kvcore.models.qwen3_asr import ARCH as QWEN3_ASR
from kvcore.models.qwen3_asr import asr_thinker
from kvcore.models.qwen_omni import OMNI, thinker
from kvcore.models.ultravox import hub_ids_refusal
from kvcore.models.wrapper_tie import TEXT_TIED, flat_tie, tie_flags, wrapper_tie


def text_model(cfg: dict[str, Any], source: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The config vLLM builds from (an omni model's thinker, all it builds; DeepSeek-VL2's
    ``language_config`` as its text config) and its text model's keys, canonical (GPT-2's
    n_layer, ChatGLM's num_layers, ...); a ``model_type`` or dtype of the wrong type refused,
    the wrapper's too (its own were skipped for its text config's; transformers cannot load
    it); the head of a class that always ties it tied (`kvcore.models.wrapper_tie.TEXT_TIED`);
    a tie_word_embeddings of the wrong type refused wherever it is (`tie_flags`)."""
    cfg = domyn_windowed(typed(cfg))    # (LongCat-Flash's: no model_type; Domyn's windows)
    cfg = iquest_windowed(cfg, source)  # (IQuest Loop's: its later passes' window)
    where = text_path(cfg)
    tie_flags(cfg, source)
    hub_ids_refusal(cfg, source)        # (Ultravox's text model named, not given)
    cfg = asr_thinker(thinker(cfg, source), source)     # (the omni models', Qwen3-ASR's)
    cfg = vlm_unwrapped(cfg, source)        # (Alpamayo 2 Super's Qwen3-VL in vlm_config)
    cfg = qwen2_text(cfg, source)       # (MiDashengLM's Qwen2.5-Omni text config)
    cfg = as_built(language_as_text(cfg, source), source)  # (Intern-S1-Pro's)
    c = canonical(text_config(cfg, source), source)
    if c.get("model_type") == MOLMO:    # (its fused MLP width, padded vocabulary, ...)
        c = molmo_text(c, source)
    if is_molmo2(cfg):      # (its qkv_bias, added vocabulary, untied head)
        c = molmo2_text(cfg, c, source)
    for given, at in ((cfg, ""), (c, f"{where[0]}." if where and c is not cfg else "")):
        if not isinstance(given.get("model_type", ""), str):
            raise InputError(f"must be a string, got {clipped(given['model_type'])}",
                             path=source or None, field=f"{at}model_type")
        try:
            dtype_names(given, source)
        except InputError as err:   # (the text config's own, named by its path)
            if not (at and err.field):
                raise
            raise InputError(err.message, path=err.path, field=at + err.field) from None
    if c.get("model_type") in TEXT_TIED:    # (Cohere's: the logits read the embedding)
        c = {**c, "tie_word_embeddings": True}
    if c is cfg:            # (PaddleOCR-VL's flat config.json: tied whatever its flag)
        c = flat_tie(c)
    refuse_padding_idx(cfg, c, source)      # (the Transformers backend's embedding)
    return cfg, class_tie(cfg, c, source)   # (a class that never, or always, ties its head)


def text_path(cfg: dict[str, Any]) -> tuple[str, dict[str, Any], set[str]] | None:
    """Where the text config is written (its path, its keys as written, the keys of the
    configs around it), None for a config that is its own text config."""
    archs = cfg.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""
    thinker = cfg.get("thinker_config")
    if (arch in OMNI or arch == QWEN3_ASR) and isinstance(thinker, dict):
        text = thinker.get("text_config")
        return ("thinker_config.text_config", text, {*cfg, *thinker}) \
            if isinstance(text, dict) else None
    for key in ("language_config",) if arch in LANGUAGE_CONFIG_ARCHS else (
            "text_config" if "text_config" in cfg else "llm_config",):
        if isinstance(cfg.get(key), dict):
            return key, cfg[key], set(cfg)
    return None


def text_config(cfg: dict[str, Any], source: str = "") -> dict[str, Any]:
    """The text model's keys: the dtype vLLM runs the whole model at (`wrapper_dtype`: the
    wrapper's, else the text config's, else the vision config's; tests/data/weights_census/
    mm_dtype); the
    ``tie_word_embeddings`` vLLM builds the head with (`kvcore.models.wrapper_tie`: the
    wrapper's, copied by `VllmConfig.with_hf_config`, for most classes); the wrapper's
    quantization_config over the text config's (with InternVL's AWQ patch:
    `kvcore.models.internvl_chat.awq_patched`)."""
    # (vLLM renames a remote-code config's llm_config text_config where it has none: InternVL)
    key = "text_config" if "text_config" in cfg else "llm_config"
    text = cfg.get(key)
    if text is not None and not isinstance(text, dict):
        # (read as the wrapper's own keys, it was refused as "missing 'num_hidden_layers'")
        raise InputError(f"must be an object (or null), got {clipped(text)}: transformers' "
                         "config class refuses it, so vLLM cannot load the model",
                         path=source or None, field=key)
    if not isinstance(text, dict):
        return cfg
    merged = {k: v for k, v in text.items() if k not in ("torch_dtype", "dtype")}
    if (dtype := wrapper_dtype(cfg, text)) is not None:
        merged["dtype"] = dtype
    merged.setdefault("model_type", text.get("model_type", cfg.get("model_type", "")))
    if (tie := wrapper_tie(cfg, text)) is not None:
        merged["tie_word_embeddings"] = tie
    if cfg.get("quantization_config") is not None:
        # vLLM reads the wrapper's own first, the text config's only without one
        # (ModelArchConfigConvertorBase.get_quantization_config)
        merged["quantization_config"] = cfg["quantization_config"]
    return awq_patched(cfg, merged)     # (InternVL's remote-code classes)


def model_name(cfg: dict[str, Any], text_model_type: str) -> str:
    """The file's `_name_or_path`, else its model_type: the wrapper's where it wraps a text
    config (whose own `_name_or_path` is where its trainer kept the base model, not this
    model's name), else ``text_model_type`` (the type kvcli reads it as)."""
    wrapper_type = cfg.get("model_type", "") if text_config(cfg) is not cfg else ""
    return str(cfg.get("_name_or_path", "") or wrapper_type or text_model_type)
