"""Gemma 3n's and Gemma 4's layers as vLLM 0.33 builds their KV caches.

KV sharing: the last ``num_kv_shared_layers`` decoder layers read an earlier layer's cache
(vLLM's ``kv_sharing_target_layer_name``). The GPU runner leaves such a layer out of the KV
cache config (`get_kv_cache_spec` skips it, so it is in no group and costs nothing in the pool);
it still attends, on its target's blocks. The target, as the model files choose it:
* Gemma 3n (gemma3n.py Gemma3nAttention): ``first - 2`` for a sliding layer, ``first - 1`` for a
  full one (``first`` the first shared layer); a negative index leaves the layer its own cache.
* Gemma 4 (gemma4.py Gemma4Attention): the last unshared layer of the same type; none is a
  ValueError at start-up (refused here).
Per-layer sizes (Gemma 4): ``per_layer_config`` (transformers' heterogeneous config: a sparse
map from layer index, an int or a zero-padded string, to ``head_dim`` / ``num_key_value_heads``);
without it Gemma4TextConfig gives every full-attention layer ``global_head_dim`` (512) and, with
``attention_k_eq_v``, ``num_global_key_value_heads``. The config class also makes the last layer
full attention, as vLLM then builds it.
``kv_sharing_fast_prefill`` (vLLM's option, off by default) only lets the shared layers skip
prompt tokens' compute (gpu_model_runner: logits indices); scheduling and caches are unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvcore.errors import InputError

GEMMA3N_TYPES = ("gemma3n", "gemma3n_text")
# (Gemma 4 Unified's text model is Gemma 4's, built by vLLM's Gemma4ForCausalLM)
GEMMA4_TYPES = ("gemma4", "gemma4_text", "gemma4_unified_text")
SHARING_TYPES = GEMMA3N_TYPES + GEMMA4_TYPES
_PER_LAYER_KEYS = ("head_dim", "num_key_value_heads")
# what Gemma4TextConfig gives the full-attention layers without a per_layer_config
_GLOBAL_HEAD_DIM = 512
# the config classes' defaults (transformers 5.20) for the keys the geometry reads; a layer
# slides unless (i + 1) % sliding_window_pattern == 0 (their layer_types without one)
GEMMA_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3n_text": {"vocab_size": 262_400, "hidden_size": 2048, "intermediate_size": 16_384,
                     "num_hidden_layers": 35, "num_attention_heads": 8,
                     "num_key_value_heads": 2, "head_dim": 256,
                     "max_position_embeddings": 32_768, "sliding_window": 512,
                     "num_kv_shared_layers": 15, "tie_word_embeddings": True,
                     "sliding_window_pattern": 5, "hidden_size_per_layer_input": 256,
                     "vocab_size_per_layer_input": 262_144, "altup_num_inputs": 4,
                     "laurel_rank": 64},
    "gemma4_text": {"vocab_size": 262_144, "hidden_size": 2304, "intermediate_size": 9216,
                    "num_hidden_layers": 30, "num_attention_heads": 8,
                    "num_key_value_heads": 4, "head_dim": 256,
                    "max_position_embeddings": 131_072, "sliding_window": 512,
                    "num_kv_shared_layers": 0, "tie_word_embeddings": True,
                    "sliding_window_pattern": 6, "hidden_size_per_layer_input": 256,
                    "vocab_size_per_layer_input": 262_144},
}
# Gemma4UnifiedTextConfig: no per-layer embeddings (gemma4.py reads 0), 262,144 positions and a
# 1,024-token window
GEMMA_DEFAULTS["gemma4_unified_text"] = {
    **GEMMA_DEFAULTS["gemma4_text"], "max_position_embeddings": 262_144, "sliding_window": 1024,
    "hidden_size_per_layer_input": 0}


@dataclass(frozen=True, slots=True)
class GemmaExtras:
    """What Gemma 3n's and Gemma 4's weights need beyond a decoder's
    (`kvcore.models.gemma_weights`)."""
    per_layer_width: int         # hidden_size_per_layer_input (0: no per-layer embeddings)
    per_layer_vocab: int         # vocab_size_per_layer_input
    shared_layers: int           # num_kv_shared_layers: the last ones project queries only
    altup_inputs: int = 0        # Gemma 3n's altup_num_inputs (0: Gemma 4, no AltUp)
    laurel_rank: int = 0
    double_wide_mlp: bool = False


def gemma4_kinds(kinds: tuple[str, ...]) -> tuple[str, ...]:
    """Gemma4TextConfig forces its last layer to full attention (with a warning)."""
    return (*kinds[:-1], "full") if kinds and kinds[-1] != "full" else kinds


def shared_layers(c: dict[str, Any], model_type: str, kinds: tuple[str, ...], get_int,
                  source: str) -> tuple[bool, ...]:
    """Per layer: whether it reads another layer's cache and has none of its own (all False
    for a model without KV sharing)."""
    n = len(kinds)
    if model_type not in SHARING_TYPES:
        return ()
    k = get_int("num_kv_shared_layers", 0) or 0
    if k > n:
        raise InputError(f"{k} shared layers of {n} (num_hidden_layers)", path=source or None,
                         field="num_kv_shared_layers")
    first = n - k
    if model_type in GEMMA3N_TYPES:
        return tuple(i >= first and first - (2 if kinds[i] == "sliding" else 1) >= 0
                     for i in range(n))
    out = []
    for i in range(n):
        if k == 0 or i < first:
            out.append(False)
            continue
        if kinds[i] not in kinds[:first]:
            raise InputError(f"layer {i} ({kinds[i]} attention) is KV-shared but no unshared "
                             f"layer before layer {first} is {kinds[i]} attention: vLLM's "
                             "gemma4.py finds no layer to share and refuses to start",
                             path=source or None, field="num_kv_shared_layers")
        out.append(True)
    return tuple(out)


def _per_layer_config(c: dict[str, Any], n: int, source: str) -> dict[int, dict[str, Any]]:
    raw = c.get("per_layer_config")
    if not isinstance(raw, dict):
        raise InputError("must be an object mapping layer indices to overrides",
                         path=source or None, field="per_layer_config")
    out: dict[int, dict[str, Any]] = {}
    for key, over in raw.items():
        i = int(key) if isinstance(key, str) and key.isdigit() else -1
        if not 0 <= i < n or not isinstance(over, dict):
            raise InputError(f"entry {key!r}: expected a layer index below {n} "
                             "(num_hidden_layers) mapping to an object", path=source or None,
                             field="per_layer_config")
        if unknown := sorted(set(over) - set(_PER_LAYER_KEYS)):
            raise InputError(f"entry {key!r}: kvcli reads only {', '.join(_PER_LAYER_KEYS)} "
                             f"per layer, not {', '.join(map(repr, unknown))}",
                             path=source or None, field="per_layer_config")
        for k, v in over.items():
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise InputError(f"entry {key!r}: {k} must be a positive integer, got {v!r}",
                                 path=source or None, field="per_layer_config")
        out[i] = over
    return out


def gemma4_layer_dims(c: dict[str, Any], kinds: tuple[str, ...], kv_heads: int,
                      head_dim: int, heads: int, get, get_int,
                      source: str) -> tuple[tuple[int, int], ...]:
    """Per layer (KV heads, head size) of a Gemma 4 text model."""
    n = len(kinds)
    if c.get("per_layer_config") is not None:
        over = _per_layer_config(c, n, source)
    else:
        glob = get_int("global_head_dim", _GLOBAL_HEAD_DIM) or _GLOBAL_HEAD_DIM
        ov: dict[str, Any] = {"head_dim": glob}
        if bool(get("attention_k_eq_v", False)) and get_int("num_global_key_value_heads"):
            ov["num_key_value_heads"] = get_int("num_global_key_value_heads")
        over = {i: ov for i, k in enumerate(kinds) if k == "full"}
    dims = tuple((over.get(i, {}).get("num_key_value_heads", kv_heads),
                  over.get(i, {}).get("head_dim", head_dim)) for i in range(n))
    for i, (kv, _) in enumerate(dims):
        if heads % kv:     # (vLLM's attention layer asserts it)
            raise InputError(f"layer {i}: {kv} KV heads do not divide the {heads} attention "
                             "heads, as vLLM's attention layer requires", path=source or None,
                             field="per_layer_config")
    return dims


def gemma_fields(c: dict[str, Any], model_type: str, kinds: tuple[str, ...], kv_heads: int,
                 head_dim: int, heads: int, get, get_int, source: str) -> dict[str, Any]:
    """The `ModelGeometry` fields of a Gemma 3n / Gemma 4 text model (none for another)."""
    if model_type not in SHARING_TYPES:
        return {}
    if model_type in GEMMA4_TYPES and get("use_bidirectional_attention") == "all":
        raise InputError("'all': every token attends both ways (non-causal, the window "
                         "halved), which kvcli does not model", path=source or None,
                         field="use_bidirectional_attention")
    dims = (gemma4_layer_dims(c, kinds, kv_heads, head_dim, heads, get, get_int, source)
            if model_type in GEMMA4_TYPES else ())
    # (Gemma4TextConfig's getattr(config, "vocab_size_per_layer_input", vocab_size))
    x = GemmaExtras(get_int("hidden_size_per_layer_input", 0) or 0,
                    get_int("vocab_size_per_layer_input") or get_int("vocab_size", 0) or 0,
                    get_int("num_kv_shared_layers", 0) or 0,
                    get_int("altup_num_inputs", 0) if model_type in GEMMA3N_TYPES else 0,
                    get_int("laurel_rank", 0) if model_type in GEMMA3N_TYPES else 0,
                    bool(get("use_double_wide_mlp", False)))
    why = "a quantised checkpoint's Gemma weights" if get("quantization_config") else ""
    return {"layer_dims": dims, "kv_shared": shared_layers(c, model_type, kinds, get_int, source),
            "gemma": x, "weights_unmodelled": why}


def one_width(c: dict[str, Any], source: str) -> dict[str, Any]:
    """Gemma 3n lists ``intermediate_size`` a layer; kvcli's geometry has one width (its
    published configs give every layer the same): a list of one value read as it."""
    widths = c.get("intermediate_size")
    if not isinstance(widths, list):
        return c
    if not widths or any(w != widths[0] for w in widths):
        raise InputError("kvcli reads one feed-forward width for every layer, got "
                         f"{sorted(set(map(repr, widths)))}", path=source or None,
                         field="intermediate_size")
    return {**c, "intermediate_size": widths[0]}
