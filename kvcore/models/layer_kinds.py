"""Each layer's kind from a config.json (`kvcore.models.hf_config` says in which order the
keys decide it): ``layer_types`` when listed, else each model family's own rule."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.config_keys import NO_WINDOW_TYPES, QWEN_WINDOWS, qwen_kinds
from kvcore.models.deepseek_v4 import DEEPSEEK_V4, V4_KIND
from kvcore.models.domyn_edge import domyn_kinds, is_domyn
from kvcore.models.dory import DORY, dory_kinds
from kvcore.models.iquest_loop import iquest_kinds, is_iquest_loop
from kvcore.models.jamba import jamba_layout
from kvcore.models.lfm2 import LFM2_TYPES, lfm2_kinds
from kvcore.models.llama4 import llama4_kinds
from kvcore.models.mimo_v2 import MIMO_V2_TYPES, mimo_kinds
from kvcore.models.qwen3_5 import GDN_TYPES
from kvcore.models.qwen3_next import qwen3_next_kinds
from kvcore.models.rnj1 import is_rnj1, rnj1_kinds
from kvcore.models.vllm_registry import unregistered
from kvcore.models.zamba2 import ZAMBA2, zamba2_kinds

_LAYER_TYPE_NAMES = {"full_attention": "full", "attention": "full", "sliding_attention": "sliding",
                     "chunked_attention": "chunked", "mamba": "mamba", "full": "full",
                     "sliding": "sliding", "chunked": "chunked"}


def _listed_kinds(types: Any, n: int, source: str) -> tuple[str, ...]:
    if not isinstance(types, list) or len(types) != n:
        raise InputError(f"'layer_types' must list {n} layer types (num_hidden_layers)",
                         path=source or None, field="layer_types")
    out = []
    for t in types:
        if not isinstance(t, str) or t not in _LAYER_TYPE_NAMES:   # (a list entry is unhashable)
            raise InputError(f"unknown layer type {t!r}", path=source or None,
                             field="layer_types")
        out.append(_LAYER_TYPE_NAMES[t])
    return tuple(out)


def _cohere2_moe_kinds(n: int, get: Any, source: str) -> tuple[str, ...]:
    """transformers' Cohere2MoeConfig's layer_types where a config lists none: the first
    ``first_k_dense_replace`` layers full at every ``prefix_dense_sliding_window_pattern``-th,
    the rest full at every ``sliding_window_pattern``-th counted from the first of them, the
    others sliding (cohere2_moe.py then reads the list)."""
    def whole(key: str, default: int, least: int) -> int:
        v = get(key, default)
        if not isinstance(v, int) or isinstance(v, bool) or not least <= v < 2**31:
            raise InputError(f"expected an integer >= {least}, got {clipped(v)}",
                             path=source or None, field=key)
        return v
    first = min(whole("first_k_dense_replace", 0, 0), n)
    prefix = whole("prefix_dense_sliding_window_pattern", 1, 1)
    every = whole("sliding_window_pattern", 4, 1)
    return tuple("full" if (i + 1) % period == 0 else "sliding"
                 for count, period in ((first, prefix), (n - first, every))
                 for i in range(count))


def layer_kinds(c: dict[str, Any], model_type: str, n: int, get, get_dim,
                 source: str) -> tuple[str, ...]:
    if model_type == DEEPSEEK_V4:     # (its layers told apart by `V4Geometry`)
        return (V4_KIND,) * n
    if model_type == "falcon_h1":
        # every layer both (transformers' FalconH1Config says "hybrid" for each)
        return ("parallel",) * n
    if model_type in GDN_TYPES:       # Qwen3-Next, Qwen3.5
        return qwen3_next_kinds(c, n, get_dim, source)
    if model_type == "llama4_text":
        return llama4_kinds(c, n, get_dim, source)
    if model_type in LFM2_TYPES:
        return lfm2_kinds(c, n, source)
    if model_type in MIMO_V2_TYPES:     # (hybrid_layer_pattern)
        return mimo_kinds(c, n, source)
    if model_type == ZAMBA2:
        return zamba2_kinds(c)
    if model_type == "gpt_oss":
        # (gpt_oss.py slides the even layers whatever layer_types lists: it never reads it)
        return tuple("sliding" if i % 2 == 0 else "full" for i in range(n))
    if model_type == DORY:  # (attention or MLP blocks, DoryConfig's pattern by default)
        return dory_kinds(c, n, source)
    if is_iquest_loop(c):   # (a cache a pass: layer_types unread)
        return iquest_kinds(c, n, source)
    types = c.get("layer_types")
    explicit = None if types is None else _listed_kinds(types, n, source)
    if is_domyn(c):     # (a window a layer)
        return domyn_kinds(c, n, source)
    if is_rnj1(c):      # (its chunked layers slide, the rest attend fully)
        return rnj1_kinds(explicit, source)
    if model_type in QWEN_WINDOWS:
        return qwen_kinds(model_type, n, get, explicit, source)
    if explicit is not None:
        return explicit
    if model_type == "cohere2_moe":
        return _cohere2_moe_kinds(n, get, source)
    if model_type == "exaone4" and "sliding_window" in c and c["sliding_window"] is None:
        raise InputError("Exaone4 without a sliding window and without 'layer_types': "
                         "transformers' Exaone4Config then takes layer i % 0 (vLLM cannot load "
                         "it); give 'layer_types'", path=source or None, field="sliding_window")
    if model_type in ("gemma3_text", "cohere2", "exaone4", "gemma3n_text", "gemma4_text",
                      "gemma4_unified_text", "plamo3"):
        p = get_dim("sliding_window_pattern")
        return tuple("full" if (i + 1) % p == 0 else "sliding" for i in range(n))
    if model_type == "gemma2":
        return tuple("sliding" if i % 2 == 0 else "full" for i in range(n))
    if model_type == "jamba":
        period, offset = jamba_layout("attn", get, get_dim, source)
        return tuple("full" if i % period == offset else "mamba" for i in range(n))
    if (get("sliding_window") and c.get("use_sliding_window", True) is not False
            and model_type not in NO_WINDOW_TYPES and not unregistered(c.get("architectures"))):
        # (a class vLLM's registry lacks runs on its Transformers backend, which slides a
        # layer only where layer_types says so: transformers/base.py)
        return ("sliding",) * n
    return ("full",) * n
