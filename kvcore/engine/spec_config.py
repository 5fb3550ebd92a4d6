"""vLLM's `--speculative-config` JSON, read for what kvcli models of it: method "ngram" and its
`num_speculative_tokens` (`kvcore.engine.spec_decode`). The n-gram matcher's own settings
(`prompt_lookup_min` / `prompt_lookup_max`) decide which drafts a real server proposes, which a
replay cannot see without the text: they are checked and folded into the acceptance model
(`--spec-acceptance-rate`). Any other method or key is refused, naming it.
"""

from __future__ import annotations

import json

from kvcore.errors import InputError, clipped

FIELD = "speculative_config"
# vLLM 0.33's draft-model methods (config/speculative.py): each needs lookahead slots, draft
# layers in the KV cache or block-hash lookahead, none of which kvcli models yet
_UNMODELLED = ("eagle", "eagle3", "mtp", "medusa", "mlp_speculator", "draft_model", "suffix",
               "dflash", "dspark", "custom_class")
_NGRAM_KEYS = ("prompt_lookup_min", "prompt_lookup_max")


def _json(value: object) -> str:
    """A JSON value as the config wrote it, cut to 40 characters."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def num_speculative_tokens(text: str | None, method: str | None = None,
                           tokens: int | None = None) -> int:
    """The drafts a decode verifies, from vLLM's flags as `EngineArgs` merges them:
    `--speculative-config`'s JSON (``text``), `--spec-method` and `--spec-tokens` (each
    refused beside the JSON key it sets, as vLLM does); method ngram only."""
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
                             ("num_speculative_tokens", "num_speculative_tokens", tokens)):
        if value is None:
            continue
        if key in spec:
            raise InputError(f"and --speculative-config's {key} are mutually exclusive (as "
                             "vLLM says)", field=flag)
        spec[key] = value
    # (where the flags set it, the error names the flag)
    where = "spec_method" if method is not None else FIELD
    method = spec.get("method")
    if method != "ngram":
        why = ("is a vLLM method kvcli does not model yet (its draft model's KV and lookahead "
               "slots)" if method in _UNMODELLED else "is not a vLLM 0.33 method")
        raise InputError(f"method {clipped(str(method))} {why}; kvcli models method ngram",
                         field=where)
    k = spec.get("num_speculative_tokens")
    if k is None:
        raise InputError("needs num_speculative_tokens (--spec-tokens K, or the JSON's key)",
                         field=where)
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise InputError(f"num_speculative_tokens must be an integer >= 1, got "
                         f"{_json(k)}", field=FIELD)
    for key in _NGRAM_KEYS:
        v = spec.get(key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
            raise InputError(f"{key} must be an integer >= 1, got {_json(v)}",
                             field=FIELD)
    other = sorted(set(spec) - {"method", "num_speculative_tokens", *_NGRAM_KEYS})
    if other:
        raise InputError(f"key(s) {clipped(', '.join(other))} not modelled (kvcli reads "
                         "method ngram, num_speculative_tokens, prompt_lookup_min/max)",
                         field=FIELD)
    return k
