"""Whether vLLM 0.33 ties a multimodal wrapper's LM head to its embedding when the wrapper's
``tie_word_embeddings`` and its text config's disagree, or either is missing, by the wrapper's
model_type (recorded for every class kvcli reads: tests/data/weights_census/mm_tie)."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped

# vLLM copies the wrapper's flag into the text config before the language model is built
# (`VllmConfig.with_hf_config`, init_vllm_registered_model), whenever the wrapper has one: the
# config.json's, else its transformers 5.20.2 class's default (given here; None: the class has
# none, and the text config's own flag stands)
WRAPPER_WINS: dict[str, bool | None] = {
    "alpamayo2_super": False, "audioflamingo3": None, "gemma3": True, "gemma4": True,
    "gemma4_unified": True, "glmasr": True, "h2ovl_chat": None, "interns1": True,
    "internvl": True, "internvl_chat": None, "llama4": False, "mistral3": True,
    "moss_transcribe_diarize": True, "NVLM_D": None, "paligemma": True, "qwen2_audio": None,
    "qwen3_vl": False, "qwen3_vl_moe": False, "skywork_chat": None, "blip-2": None,
    "exaone4_5": False, "granite_speech": True, "granite_speech_plus": True,
    "llava_next": False, "idefics3": False, "smolvlm": False,
    # (tests/data/weights_census/mm_cohere: granite4-vision-synthetic's tied text config)
    "granite4_vision": False,
    # (tests/data/weights_census/mm_audio2: the tiny Ultravox's wrapper false over text true)
    "ultravox": None,
}
# classes whose head reads the wrapper's own text config, which the copy reaches only where the
# text config names its architectures (else `with_hf_config` copies a deepcopy: idefics3.py)
HEAD_ON_WRAPPER = frozenset({"idefics3", "smolvlm"})
# the same copy, but the config class first sets its own flag where the text config's is true
# (transformers' pre-v5 compatibility, e.g. Qwen2VLConfig.__post_init__): either one ties;
# (the wrapper class's default, the text config class's)
EITHER_TIES: dict[str, tuple[bool, bool]] = {
    "glm4v": (False, False), "glm_ocr": (False, False), "llava_onevision": (False, False),
    "paddleocr_vl": (True, True), "qwen2_vl": (False, False), "qwen2_5_vl": (False, False),
    "llava": (False, False), "llava_next_video": (False, False),
}
# classes whose config class, given a flat config.json (no text_config), moves its
# tie_word_embeddings into the text config it builds, so the wrapper keeps its own default,
# true, which vLLM copies back: tied whatever the flag (PaddleOCRVLConfig.__post_init__;
# tests/data/weights_census/mm_ocr)
FLAT_TIED = frozenset({"paddleocr_vl"})
# language models whose head vLLM ties whatever the flags say (Cohere's logits read the
# embedding), or never ties (they build an lm_head of their own unconditionally)
ALWAYS_TIED = frozenset({"cohere2_vision", "gemma3n"})
# the text classes that do so: commandr.py's CohereForCausalLM (Command-R's and Cohere2's) and
# cohere2_moe.py's compute logits from the embedding, build no lm_head and drop the
# checkpoint's; true or false in config.json (tests/data/weights_census/cohere_tie)
TEXT_TIED = frozenset({"cohere", "cohere2", "cohere2_moe"})
NEVER_TIED = frozenset({"glm4v_moe", "kimi_k25", "kimi_vl", "muse_glimmer", "cosmos3_edge",
                        "aria"})


# where a config.json holds a text model's flag: its own top level, a wrapper's text config, a
# remote-code wrapper's (InternVL's llm_config, DeepSeek-VL2's language_config), an omni
# model's thinker and its text config
_FLAG_PLACES = ((), ("text_config",), ("llm_config",), ("language_config",),
                ("thinker_config",), ("thinker_config", "text_config"))


def tie_flags(cfg: dict[str, Any], source: str) -> None:
    """Refuses a ``tie_word_embeddings`` that is neither true nor false (null stays absent),
    wherever the config holds one: transformers 5.20.2's config classes type it ``bool`` and
    refuse anything else (a strict dataclass field), so vLLM cannot load the model, where kvcli
    read "x" or {"a": 1} as true and 0, "" or [] as false."""
    for place in _FLAG_PLACES:
        d: object = cfg
        for key in place:
            d = d.get(key) if isinstance(d, dict) else None
        flag = d.get("tie_word_embeddings") if isinstance(d, dict) else None
        if flag is not None and not isinstance(flag, bool):
            raise InputError(f"expected true or false, got {clipped(flag)}: transformers' "
                             "config classes refuse anything else, so vLLM cannot load the "
                             "model", path=source or None,
                             field=".".join((*place, "tie_word_embeddings")))


def wrapper_tie(cfg: dict[str, Any], text: dict[str, Any]) -> bool | None:
    """The text model's tie_word_embeddings as vLLM builds it from wrapper `cfg` and its text
    config `text`; None where the text config's own flag (or its class's default) stands."""
    model_type = str(cfg.get("model_type", ""))
    if model_type in ALWAYS_TIED or model_type in NEVER_TIED:
        return model_type in ALWAYS_TIED
    if model_type in EITHER_TIES:
        wrapper_default, text_default = EITHER_TIES[model_type]
        return bool(cfg.get("tie_word_embeddings", wrapper_default)
                    or text.get("tie_word_embeddings", text_default))
    if model_type in HEAD_ON_WRAPPER and not text.get("architectures"):
        return None
    if model_type in WRAPPER_WINS:
        flag = cfg.get("tie_word_embeddings", WRAPPER_WINS[model_type])
        return None if flag is None else bool(flag)
    return None


def flat_tie(cfg: dict[str, Any]) -> dict[str, Any]:
    """A flat config's text model (no text config: the config itself) as vLLM builds it: tied
    for `FLAT_TIED`."""
    if cfg.get("model_type") in FLAT_TIED:
        return {**cfg, "tie_word_embeddings": True}
    return cfg
