"""The Mamba state of a Jamba (Mamba1), Falcon-H1 or Granite 4.0-H (Mamba2) config, as vLLM
0.33's `get_mamba_state_shape_from_config` of each model reads it. Every size is an integer
>= 1 (``get_dim``): a zero or a negative ``mamba_d_conv`` sized a conv state of -1 rows and a
page of negative bytes padded to a positive one, without a word; vLLM cannot build the layer.
Jamba's ``mamba_dt_rank`` is "auto" (ceil(hidden_size / 16), JambaConfig) or such an integer:
anything else raised a TypeError / ValueError from ``int()`` or was read as a size."""

from __future__ import annotations

import math
from typing import Any

from kvcore.errors import InputError
from kvcore.models.geometry import MambaGeometry
from kvcore.models.lfm2 import LFM2_TYPES, lfm2_conv_state


def mamba_state(c: dict[str, Any], model_type: str, hidden: int, get, get_dim,
                source: str) -> MambaGeometry:
    if model_type in LFM2_TYPES:        # (its short convolution: a conv state alone)
        return lfm2_conv_state(model_type, get, get_dim)
    d_state = get_dim("mamba_d_state", required=True)
    d_conv = get_dim("mamba_d_conv", required=True)
    if model_type == "jamba":
        expand = get_dim("mamba_expand", required=True)
        dt_rank = (-(-hidden // 16) if get("mamba_dt_rank") == "auto"
                   else get_dim("mamba_dt_rank", required=True))
        return MambaGeometry("mamba1", expand * hidden, d_state, d_conv, dt_rank=dt_rank)
    if model_type == "zamba2":
        # Zamba2ForCausalLM.get_mamba_state_shape_from_config: mamba_expand x hidden_size over
        # n_mamba_heads of mamba_headdim (`kvcore.models.zamba2.as_built` fills both in)
        return MambaGeometry("mamba2", get_dim("mamba_expand", required=True) * hidden, d_state,
                             d_conv, n_heads=get_dim("n_mamba_heads", required=True),
                             d_head=get_dim("mamba_headdim", required=True),
                             n_groups=get_dim("mamba_ngroups", required=True),
                             conv_bias=bool(get("use_conv_bias", True)))
    n_heads = get_dim("mamba_n_heads", required=True)
    d_head = get_dim("mamba_d_head", required=True)
    d_inner = n_heads * d_head
    if model_type == "granitemoehybrid" and get("mamba_expand", 2) * hidden != d_inner:
        # (transformers' GraniteMoeHybridConfig.validate_architecture: the config does not load;
        # a hidden size drawn apart from the Mamba heads, tests/data/size_fuzz)
        raise InputError(f"mamba_n_heads x mamba_d_head ({d_inner}) must equal mamba_expand x "
                         f"hidden_size ({get('mamba_expand', 2) * hidden}), as transformers' "
                         "GraniteMoeHybridConfig requires: 'The dimensions for the Mamba head "
                         "state do not match the model intermediate_size'", path=source or None,
                         field="mamba_n_heads")
    if model_type == "falcon_h1":
        # FalconH1ForCausalLM.get_mamba_state_shape_from_config: mamba_d_ssm, else
        # int(mamba_expand x hidden_size)
        # (an explicit null takes the second; a missing key the config class's 1024)
        d_ssm = c["mamba_d_ssm"] if "mamba_d_ssm" in c else get("mamba_d_ssm")
        d_inner = (get_dim("mamba_d_ssm") if d_ssm is not None
                   else _expanded(get("mamba_expand", 2), hidden, source))
    # (Falcon-H1's mixer norms its gated output only where mamba_rms_norm: its class's default
    # false, the published checkpoints' true; falcon_h1.py:133; tests/data/size_fuzz)
    return MambaGeometry("mamba2", d_inner, d_state, d_conv, n_heads=n_heads,
                         d_head=d_head, n_groups=get_dim("mamba_n_groups", 1),
                         gated_norm=model_type != "falcon_h1" or get("mamba_rms_norm") is True)


def _expanded(expand: Any, hidden: int, source: str) -> int:
    """int(mamba_expand x hidden_size), a number vLLM multiplies (a float is taken)."""
    ok = (isinstance(expand, (int, float)) and not isinstance(expand, bool)
          and math.isfinite(expand) and 1 <= expand * hidden < 2**63)
    if not ok:
        raise InputError(f"expected a positive number, got {expand!r}", path=source or None,
                         field="mamba_expand")
    return int(expand * hidden)
