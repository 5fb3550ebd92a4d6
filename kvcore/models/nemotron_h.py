"""NVIDIA Nemotron-H (Nemotron-H 8B/47B/56B, Nemotron Nano 9B v2, ...) as vLLM 0.33 reads it.

A Nemotron-H layer has ONE mixer, no feed-forward beside it: ``hybrid_override_pattern`` gives
one character a layer (vLLM's nemotron_h.py `ALL_DECODER_LAYER_TYPES`): ``M`` a Mamba2 layer
(`MambaMixer2`), ``*`` an attention layer, ``-`` a feed-forward layer, ``E`` a mixture-of-
experts feed-forward layer. vLLM builds ``len(hybrid_override_pattern)`` layers; the
feed-forward layers keep no KV cache (kvcli's kind ``mlp``). Newer transformers configs give
the same as ``layers_block_type`` / ``layer_types`` (``linear_attention``, ``full_attention``,
``mlp``, ``moe``).

The Mamba2 state (`NemotronHForCausalLM.get_mamba_state_shape_from_config`): intermediate size
``mamba_num_heads x mamba_head_dim``, ``n_groups``, ``ssm_state_size``, ``conv_kernel``.
Its SSM state is float32 whatever the model dtype (vLLM's `NemotronHForCausalLMConfig` sets
``mamba_ssm_cache_dtype`` to the config's value, else float32): the page of Nemotron Nano 9B v2
is 5,316,608 bytes, not the 2,695,168 a bf16 state would give; the architectures outside
`SSM_RULE_ARCHS` keep the model dtype. Attention: ``head_dim``
(transformers' default 128), else hidden / heads.
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.dtypes import DTYPE_ALIASES
from kvcore.models.geometry import MambaGeometry

# transformers' NemotronHConfig defaults (the oracle's transformers) for keys a config omits.
NEMOTRON_H_DEFAULTS: dict[str, Any] = {
    "head_dim": 128, "mamba_num_heads": 128, "mamba_head_dim": 64, "n_groups": 8,
    "ssm_state_size": 128, "conv_kernel": 4, "max_position_embeddings": 4096,
    "vocab_size": 131072}

# What vLLM 0.33's perf.py reads for a Nemotron-H config without experts: it takes the expert
# keys by `getattr`, and transformers' NemotronHConfig answers them with its class defaults (the
# oracle's parse of Nemotron Nano 9B v2: 8 experts of 7,688, 2 a token, 1 shared, all 56 layers
# MoE). kvcli's own geometry keeps the model's real layers; only the vLLM count reads these.
PERF_EXPERT_DEFAULTS = {"num_experts": 8, "num_experts_per_tok": 2,
                        "moe_intermediate_size": 7688, "num_shared_experts": 1}

_PATTERN = {"M": "mamba", "*": "full", "-": "mlp", "E": "mlp"}
_TYPES = {"linear_attention": "mamba", "mamba": "mamba", "full_attention": "full",
          "attention": "full", "mlp": "mlp", "moe": "mlp"}


def nemotron_h_layers(c: dict[str, Any], source: str) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    """(each layer's kind, whether it is a mixture-of-experts layer), from the config's
    ``layers_block_type`` / ``layer_types`` list or its ``hybrid_override_pattern``; with a
    ``sliding_window`` every attention layer slides (vLLM's nemotron_h.py hands the config's
    window to each one's Attention)."""
    kinds, moe = _listed_layers(c, source)
    window = c.get("sliding_window")
    if window is not None and (not isinstance(window, int) or isinstance(window, bool)
                               or not 1 <= window < 2**63):
        # (vLLM builds a SlidingWindowSpec of whatever it is; kvcli read "x", 0 or -1 as no
        # window at all, and sized full attention without a word)
        raise InputError(f"expected an integer >= 1 and below 2^63, or null, got "
                         f"{clipped(window)}", path=source or None, field="sliding_window")
    if window is not None:
        kinds = tuple("sliding" if k == "full" else k for k in kinds)
    return kinds, moe


def _listed_layers(c: dict[str, Any], source: str) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    listed = c.get("layers_block_type") or c.get("layer_types")
    if listed is not None:
        field = "layers_block_type" if c.get("layers_block_type") else "layer_types"
        # (an entry that is a list is unhashable: a TypeError, not a refusal)
        if not isinstance(listed, list) or not all(isinstance(t, str) and t in _TYPES
                                                   for t in listed):
            raise InputError(f"expected a list of {', '.join(sorted(_TYPES))}", path=source or None,
                             field=field)
        return _some_cache(tuple(_TYPES[t] for t in listed), source, field), tuple(
            t == "moe" for t in listed)
    pattern = c.get("hybrid_override_pattern")
    if not isinstance(pattern, str) or not pattern or set(pattern) - set(_PATTERN):
        raise InputError("a Nemotron-H config needs 'hybrid_override_pattern', one of M (Mamba2), "
                         "* (attention), - (MLP), E (MoE) a layer", path=source or None,
                         field="hybrid_override_pattern")
    return (_some_cache(tuple(_PATTERN[ch] for ch in pattern), source, "hybrid_override_pattern"),
            tuple(ch == "E" for ch in pattern))


def _some_cache(kinds: tuple[str, ...], source: str, field: str) -> tuple[str, ...]:
    """The kinds, refused when none keeps a cache (only MLP / MoE layers): sizing would divide by
    a request's need of 0 blocks."""
    if set(kinds) <= {"mlp"}:
        raise InputError("no Mamba (M) or attention (*) layer: no layer keeps a KV cache or a "
                         "state for kvcli to replay", path=source or None, field=field)
    return kinds


def nemotron_h_mamba_keys(get_dim) -> dict[str, int]:
    """The Mamba2 state's numbers under kvcore's names, each an integer >= 1 (``get_dim``: a
    conv_kernel of 0 sized a conv state of -1 rows)."""
    return {"n_heads": get_dim("mamba_num_heads", required=True),
            "d_head": get_dim("mamba_head_dim", required=True),
            "n_groups": get_dim("n_groups", required=True),
            "d_state": get_dim("ssm_state_size", required=True),
            "d_conv": get_dim("conv_kernel", required=True)}


# the architectures vLLM's MODELS_CONFIG_MAP gives NemotronH's SSM cache dtype rule
# (model_executor/models/config.py: the config's mamba_ssm_cache_dtype, else float32); any other
# name built on the same class (the Nemotron Omni ones) keeps "auto": the model dtype
SSM_RULE_ARCHS = ("NemotronHForCausalLM", "NemotronHPuzzleForCausalLM", "NemotronH_Nano_VL_V2")


def nemotron_h_mamba(get, get_dim, source: str, archs: Any = None,
                     dtype: str = "bfloat16") -> MambaGeometry:
    """A Nemotron-H config's Mamba2 state, its SSM state in ``mamba_ssm_cache_dtype`` (the
    model `dtype` for an architecture outside `SSM_RULE_ARCHS`)."""
    k = nemotron_h_mamba_keys(get_dim)
    arch = archs[0] if isinstance(archs, list) and archs else SSM_RULE_ARCHS[0]
    rule = arch in SSM_RULE_ARCHS
    raw = str(get("mamba_ssm_cache_dtype") or "float32") if rule else dtype
    ssm = DTYPE_ALIASES.get(raw)
    if ssm is None:
        raise InputError(f"unsupported dtype {raw!r}", path=source or None,
                         field="mamba_ssm_cache_dtype")
    return MambaGeometry("mamba2", k["n_heads"] * k["d_head"], k["d_state"], k["d_conv"],
                         n_heads=k["n_heads"], d_head=k["d_head"], n_groups=k["n_groups"],
                         ssm_dtype=ssm)
