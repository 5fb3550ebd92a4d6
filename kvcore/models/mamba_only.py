"""The attention-free Mamba models vLLM 0.33 serves: `MambaForCausalLM` (``model_type`` mamba),
`FalconMambaForCausalLM` (falcon_mamba), both Mamba-1, and `Mamba2ForCausalLM` (mamba2).

Every layer is one RMSNorm and one mixer (vLLM's mamba.py `MambaMixer`, mamba2.py
`MambaMixer2`), no attention and no feed-forward, so vLLM's planning puts every layer in one
Mamba group. What vLLM decides for such a model (recorded in tests/data/mamba_only/start.json):
the model is attention-free (`IsAttentionFree`), so prefix caching is off unless asked for
(`ModelConfig.is_prefix_caching_supported`): "none" mode, one block of max_model_len tokens a
request; asked for, "align" mode with the Mamba block at the block size (16 by default: no
attention backend raises it). A config with no length key runs at 2,048 tokens and accepts any
max_model_len (`_get_and_verify_max_len`).

The state (`get_mamba_state_shape_from_config`): Mamba-1 conv (conv_kernel - 1,
intermediate_size) and SSM (intermediate_size, state_size), with transformers' intermediate_size
= int(expand x hidden_size) (its `__post_init__` overrides a given one); Mamba2 intermediate
expand x hidden_size over ``num_heads`` heads of ``head_dim``, ``n_groups``, ``state_size``.
"""

from __future__ import annotations

import math
from typing import Any

from kvcore.errors import InputError
from kvcore.models.context_limit import LENGTH_KEYS
from kvcore.models.geometry import MambaGeometry, ModelGeometry
from kvcore.models.unlimited_ocr import caching_forced_off

MAMBA_ONLY_TYPES = ("mamba", "falcon_mamba", "mamba2")
# vLLM's length for a config with none of the length keys (a warning says it assumes it)
ASSUMED_LEN = 2048
# any max_model_len: vLLM takes the one given when the config has no length key
NO_LIMIT = 2**62

# transformers' MambaConfig / FalconMambaConfig / Mamba2Config defaults (the oracle's) for the
# keys kvcli reads
_DEFAULTS: dict[str, dict[str, Any]] = {
    "mamba": {"vocab_size": 50280, "hidden_size": 768, "state_size": 16, "num_hidden_layers": 32,
              "expand": 2, "conv_kernel": 4, "time_step_rank": "auto",
              "tie_word_embeddings": True},
    "mamba2": {"num_heads": 128, "head_dim": 64, "vocab_size": 32768, "hidden_size": 4096,
               "state_size": 128, "num_hidden_layers": 64, "expand": 2, "conv_kernel": 4,
               "n_groups": 8, "tie_word_embeddings": False}}
_DEFAULTS["falcon_mamba"] = _DEFAULTS["mamba"]


def is_attention_free(g: ModelGeometry) -> bool:
    """Whether vLLM serves the model as attention-free (prefix caching off by default)."""
    return g.model_type in MAMBA_ONLY_TYPES


def prefix_caching(g: ModelGeometry, given: bool | None) -> bool:
    """Whether prefix caching is on: as ``given``, else vLLM's default (off for an
    attention-free model: `ModelConfig.is_prefix_caching_supported`); off for Unlimited-OCR
    whatever is given (`kvcore.models.unlimited_ocr`)."""
    if caching_forced_off(g.architecture):
        return False
    return not is_attention_free(g) if given is None else given


def read_mamba_only(c: dict[str, Any], model_type: str, *, name: str, source: str,
                    dtype: str) -> ModelGeometry:
    """The geometry of a Mamba / FalconMamba / Mamba2 config ``c`` (``dtype``: read already)."""
    defaults = _DEFAULTS[model_type]
    if c.get("quantization_config") is not None:
        raise InputError(f"a quantised {model_type} checkpoint is not modelled (its weights and "
                         "vLLM's refusals of it are not kvcli's)", path=source or None,
                         field="quantization_config")

    def dim(key: str) -> int:
        v = c[key] if c.get(key) is not None else defaults[key]
        if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v < 2**63:
            raise InputError(f"expected an integer >= 1, got {v!r}", path=source or None,
                             field=key)
        return v

    hidden, n = dim("hidden_size"), dim("num_hidden_layers")
    if n > 100_000:
        raise InputError(f"expected an integer >= 1 and <= 100,000, got {n!r}",
                         path=source or None, field="num_hidden_layers")
    expand = c.get("expand", defaults["expand"])
    if (not isinstance(expand, (int, float)) or isinstance(expand, bool)
            or not math.isfinite(expand) or not 1 <= expand * hidden < 2**63):
        raise InputError(f"expected a positive number, got {expand!r}", path=source or None,
                         field="expand")
    d_inner = int(expand * hidden)
    if model_type == "mamba2":
        heads, head_dim = dim("num_heads"), dim("head_dim")
        if d_inner != heads * head_dim:
            # (transformers' Mamba2Config.validate_architecture: the config does not load)
            raise InputError(f"hidden_size x expand ({d_inner}) must equal num_heads x head_dim "
                             f"({heads * head_dim}), as transformers' Mamba2Config requires",
                             path=source or None, field="num_heads")
        mamba = MambaGeometry("mamba2", d_inner, dim("state_size"), dim("conv_kernel"),
                              n_heads=heads, d_head=head_dim, n_groups=dim("n_groups"))
    else:
        # (vLLM's MambaMixer is intermediate_size wide: transformers' MambaConfig computes it
        # from expand, then a config.json's own key overrides it; tests/data/size_fuzz)
        if c.get("intermediate_size") is not None:
            d_inner = dim("intermediate_size")
        rank = c.get("time_step_rank", "auto")
        mamba = MambaGeometry("mamba1", d_inner, dim("state_size"), dim("conv_kernel"),
                              dt_rank=-(-hidden // 16) if rank in ("auto", None)
                              else dim("time_step_rank"))
    lengths = [c[k] for k in LENGTH_KEYS if isinstance(c.get(k), int) and c[k] > 0]
    length = min(lengths) if lengths else ASSUMED_LEN
    tie = c.get("tie_word_embeddings", defaults["tie_word_embeddings"])
    return ModelGeometry(
        name=name or str(c.get("_name_or_path", "") or model_type), model_type=model_type,
        layer_kinds=("mamba",) * n, num_attention_heads=0, num_kv_heads=0, head_dim=0,
        hidden_size=hidden, dtype=dtype, max_position_embeddings=length, mamba=mamba,
        vocab_size=dim("vocab_size"), tie_word_embeddings=bool(tie), source=source,
        context_limit=length if lengths else NO_LIMIT, default_len=length)
