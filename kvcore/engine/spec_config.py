"""vLLM's `--speculative-config` JSON (and its `--spec-method` / `--spec-tokens` shorthands),
read for what kvcli models of it (`kvcore.engine.spec_decode`): the method, its
`num_speculative_tokens`, and for EAGLE `disable_lookahead_block_hashes`.

Methods: "ngram" (its `max_model_len`, which vLLM reads no further, accepted), and "eagle" /
"eagle3" / "mtp" (the same in vLLM's scheduler: K lookahead slots, and with prefix caching
lookahead block hashes or, with `disable_lookahead_block_hashes`, the EAGLE block drop; their
draft's layers and weights sized with the model's: EAGLE's `model`, `kvcore.models.eagle_draft`,
and DeepSeek-V3's own MTP module, `kvcore.models.mtp_draft`). The n-gram matcher's settings
(`prompt_lookup_min` / `_max`) and the draft's skill decide which drafts a real server proposes,
which a replay cannot see without the text: checked and folded into the acceptance model
(`--spec-acceptance-rate`). Any other method or key is refused, naming it.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from kvcore.errors import InputError, clipped

FIELD = "speculative_config"
SPEC_METHODS = ("ngram", "eagle", "eagle3", "mtp")
# vLLM's `use_eagle()` methods: a drafter on the GPU writing KV K tokens ahead, lookahead
# hashes or the block drop (single-module MTP is EAGLE-3 to the scheduler:
# tests/data/sched_spec_mtp/DESIGN.md)
EAGLE_METHODS = ("eagle", "eagle3", "mtp")
# vLLM 0.33's other methods (config/speculative.py): draft models with their own KV, parallel
# drafters
_UNMODELLED = ("medusa", "mlp_speculator", "draft_model", "suffix", "dflash", "dspark",
               "custom_class", "ngram_gpu", "extract_hidden_states")
# its deprecated names of mtp (MTPModelTypes, config/speculative.py:38-67): SpeculativeConfig's
# __post_init__ rewrites each to mtp with a warning before it reads anything else, whatever the
# target (the draft is then the target's own module, chosen by its model_type)
_MTP_NAMES = ("deepseek_mtp", "dots3_note_mtp", "mimo_mtp", "mimo_v2_mtp", "glm4_moe_mtp",
              "glm4_moe_lite_mtp", "glm_ocr_mtp", "ernie_mtp", "nemotron_h_mtp",
              "exaone_moe_mtp", "exaone4_5_mtp", "qwen3_next_mtp", "qwen4_exp_mtp",
              "qwen3_5_mtp", "longcat_flash_mtp", "bailing_hybrid_v3_mtp", "minimax_m3_mtp",
              "bailing_hybrid_mtp", "kimi_k3_mtp", "pangu_ultra_moe_mtp", "step3p5_mtp",
              "step5_mtp", "hy_v3_mtp", "hy_v4_mtp", "gemma4_mtp", "inkling_mtp",
              "glm5_next_mtp")
# the replay options the JSON's keys set (kvcli's name -> the JSON's): a refusal of a value the
# JSON gave names the JSON's key, not a flag nobody typed (`json_field`)
JSON_KEYS = {"spec_method": "method", "num_speculative_tokens": "num_speculative_tokens",
             "spec_model": "model",
             "disable_lookahead_block_hashes": "disable_lookahead_block_hashes"}


def json_field(name: str, from_json: frozenset[str]) -> str:
    """The field a refusal of option `name` names: ``speculative_config.KEY`` when the JSON
    gave it (`from_json`: the options it set), else `name` (its own flag)."""
    return f"{FIELD}.{JSON_KEYS[name]}" if name in from_json else name


def at_json_key(err: InputError, from_json: frozenset[str]) -> InputError:
    """``err`` renamed to the JSON's key (`json_field`) when it refuses, with no file, an option
    the JSON set (`from_json`); else ``err`` itself."""
    if err.path is None and err.field in from_json:
        return InputError(err.message, field=json_field(err.field, from_json), remedy=err.remedy)
    return err


def set_by_json(spec: dict, flags: dict) -> frozenset[str]:
    """The options of `speculative_settings`' answer `spec` that the JSON set: those whose own
    flag (`flags`, kvcli's name -> the flag's value or None) was not given."""
    return frozenset(k for k in spec if flags.get(k) is None)
# (ngram's `max_model_len`: vLLM checks it is an integer >= 1 and reads it no further, the
# draft being the target: tests/data/draft_max_len/spec_max_len.json)
_KEYS = {"ngram": ("prompt_lookup_min", "prompt_lookup_max", "max_model_len"),
         "eagle": ("model", "disable_lookahead_block_hashes"),
         "eagle3": ("model", "disable_lookahead_block_hashes"),
         "mtp": ("disable_lookahead_block_hashes",)}


def _json(value: object) -> str:
    """A JSON value as the config wrote it, cut to 40 characters."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_method(method: object, field: str = FIELD,
                 warn: Callable[[str], None] | None = None) -> str:
    """A method kvcli models (a deprecated name of mtp as mtp, `warn` told vLLM's warning), or
    the error saying why not."""
    if (said := mtp_rename(method)) is not None:
        if warn is not None:
            warn(said)
        return "mtp"
    if method not in SPEC_METHODS:
        why = ("is a vLLM method kvcli does not model yet (its draft model's KV and slots)"
               if method in _UNMODELLED else "is not a vLLM 0.33 method")
        raise InputError(f"method {clipped(str(method))} {why}; kvcli models methods "
                         f"{', '.join(SPEC_METHODS)}", field=field)
    return str(method)


def mtp_rename(method: object) -> str | None:
    """vLLM 0.33's warning where `method` is one of its deprecated names of mtp, which it takes
    as mtp, else None: what every entry point asks (the flags, the JSON, a trace's config line
    and a sweep's grid, through `check_method` or `options.resolve`)."""
    return deprecated_warning(str(method)) if method in _MTP_NAMES else None


def deprecated_warning(method: str) -> str:
    """vLLM 0.33's warning, word for word, on rewriting deprecated name `method` to mtp."""
    return f"method `{method}` is deprecated and replaced with mtp."


def speculative_settings(text: str | None, method: str | None = None,
                         tokens: int | None = None, model: str | None = None,
                         warn: Callable[[str], None] | None = None) -> dict:
    """The replay options vLLM's flags set, as `EngineArgs` merges them: `--speculative-config`'s
    JSON (``text``), `--spec-method`, `--spec-tokens` and `--spec-model` (each refused beside
    the JSON key it sets, as vLLM does): `spec_method`, `num_speculative_tokens` and, for EAGLE,
    `spec_model` and `disable_lookahead_block_hashes`. `warn` is told vLLM's warnings (a
    deprecated name of mtp)."""
    spec: object = {}
    if text is not None:
        try:
            spec = json.loads(text)
        except ValueError:
            spec = None
    if not isinstance(spec, dict):
        raise InputError(f"must be a JSON object such as '{{\"method\": \"ngram\", "
                         f"\"num_speculative_tokens\": 3}}', got {clipped(text)}", field=FIELD)
    for flag, key, value in (("spec_method", "method", method),
                             ("num_speculative_tokens", "num_speculative_tokens", tokens),
                             ("spec_model", "model", model)):
        if value is None:
            continue
        if key in spec:
            raise InputError(f"and --speculative-config's {key} are mutually exclusive (as "
                             "vLLM says)", field=flag)
        spec[key] = value
    # (where the flags set it, the error names the flag)
    where = "spec_method" if method is not None else FIELD
    name = check_method(spec.get("method"), where, warn)
    k = spec.get("num_speculative_tokens")
    if k is None:
        raise InputError("needs num_speculative_tokens (--spec-tokens K, or the JSON's key)",
                         field=where)
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise InputError(f"num_speculative_tokens must be an integer >= 1, got "
                         f"{_json(k)}", field=FIELD)
    for key in _KEYS[name]:
        v = spec.get(key)
        ok = (v is None or isinstance(v, str) if key == "model" else
              v is None or isinstance(v, bool) if key == "disable_lookahead_block_hashes" else
              v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 1))
        if not ok:
            raise InputError(f"{key} must be {_WANTS[key]}, got {_json(v)}", field=FIELD)
    if name in EAGLE_METHODS and (v := spec.get("max_model_len")) is not None:
        # (null is vLLM's default, and a value it refuses is refused in its words first)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise InputError(f"max_model_len must be {_WANTS['max_model_len']}, got {_json(v)}",
                             field=FIELD)
        raise InputError(f"max_model_len (the draft's) is not modelled for {name}: {_DRAFT_LEN}",
                         field=FIELD)
    other = sorted(set(spec) - {"method", "num_speculative_tokens", "max_model_len",
                                *_KEYS[name]})
    if other:
        raise InputError(f"key(s) {clipped(', '.join(other))} not modelled (kvcli reads "
                         f"method, num_speculative_tokens, {', '.join(_KEYS[name])} for "
                         f"{name})", field=FIELD)
    out = {"spec_method": name, "num_speculative_tokens": k}
    if spec.get("disable_lookahead_block_hashes"):
        out["disable_lookahead_block_hashes"] = True
    if spec.get("model") is not None:
        out["spec_model"] = spec["model"]
    return out


# what vLLM 0.33 does with an EAGLE / MTP draft's `max_model_len` (recorded:
# tests/data/draft_max_len/spec_max_len.json): the draft's ModelConfig refuses one above the
# draft config's derived length, `_maybe_override_draft_max_model_len` one above the target's,
# and where the draft's RoPE does more than size its cache `_limit_max_model_len_to_draft`
# lowers the target's max_model_len to it; else it changes nothing the scheduler sees
_DRAFT_LEN = ("vLLM refuses one above the draft config's derived length or the target's "
              "max_model_len, and lowers the target's max_model_len to it only where the "
              "draft's RoPE does more than size its cache (YaRN, dynamic); leave the key out "
              "and give that length as --max-model-len")
_WANTS = {"prompt_lookup_min": "an integer >= 1", "prompt_lookup_max": "an integer >= 1",
          "max_model_len": "an integer >= 1",
          "model": "a string (the draft model)", "disable_lookahead_block_hashes": "true or false"}
