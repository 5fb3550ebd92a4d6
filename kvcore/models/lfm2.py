"""Liquid's LFM2 (`Lfm2ForCausalLM`, ``model_type`` lfm2; lfm2.py) and LFM2-MoE
(`Lfm2MoeForCausalLM`, lfm2_moe; lfm2_moe.py) as vLLM 0.33 reads them.

Each layer is attention or a short convolution (``layer_types``: ``full_attention`` or ``conv``;
transformers' Lfm2Config fills it from ``full_attn_idxs`` when absent, every layer attention
when both are), with a SwiGLU feed-forward beside either. vLLM's `ShortConv` is a Mamba-kind
layer (`MambaBase`): its state is one conv tensor (``conv_L_cache`` - 1, ``conv_dim`` / TP) in the
model dtype, a `MambaSpec` of ``mamba_type`` short_conv with no prefill checkpoint and no conv
rows for speculative tokens (`Lfm2ForCausalLM.get_mamba_state_shape_from_config` passes no
``num_spec``): at the scheduler it is a Mamba-1 group (kvcli's kind ``mamba``, version
``short_conv``). The model is hybrid, so the attention block is raised until its page holds the
state, as for the other hybrids.

The LM head is the embedding whatever the config says: both model files tie it
unconditionally (tests/data/lfm2/census.json: ``"tie_word_embeddings": false`` built tied).
vLLM reads ``block_dim`` (the feed-forward's input and output) and ``conv_dim`` (the short
convolution's, its projections' too) without defaults, and builds both layers on them whatever
``hidden_size`` says (the same in every published LFM2; the norms and attention are
``hidden_size`` wide).

The feed-forward's width (`Lfm2MLP`): with ``block_auto_adjust_ff_dim`` int(2/3 x
``intermediate_size``), times ``block_ffn_dim_multiplier`` when set, rounded up to a multiple of
``block_multiple_of``.
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError
from kvcore.models.geometry import MambaGeometry

LFM2_TYPES = ("lfm2", "lfm2_moe")
_TYPES = {"full_attention": "full", "conv": "mamba"}


def lfm2_kinds(c: dict[str, Any], n: int, source: str) -> tuple[str, ...]:
    """Each layer's kind: ``layer_types``, else ``full_attn_idxs``, else every layer attention."""
    listed = c.get("layer_types")
    if listed is not None:
        if (not isinstance(listed, list) or len(listed) != n
                or not all(isinstance(t, str) and t in _TYPES for t in listed)):
            raise InputError(f"expected a list of {n} (num_hidden_layers) of conv, "
                             "full_attention", path=source or None, field="layer_types")
        return tuple(_TYPES[t] for t in listed)
    idxs = c.get("full_attn_idxs")
    if idxs is None:
        return ("full",) * n
    if not isinstance(idxs, list) or not all(type(i) is int for i in idxs):
        raise InputError("expected a list of layer indices", path=source or None,
                         field="full_attn_idxs")
    return tuple("full" if i in idxs else "mamba" for i in range(n))


def lfm2_conv_state(model_type: str, get, get_dim, vl: bool = False) -> MambaGeometry:
    """A short-convolution layer's state: ``conv_dim`` wide (no default: vLLM reads it), the
    hidden size in LFM2-MoE (lfm2_moe.py builds its ShortConv so) and under LFM2-VL
    (``vl``: lfm2_vl.py's state shape reads the text config's hidden_size)."""
    wide = model_type == "lfm2_moe" or vl
    width = get_dim("hidden_size" if wide else "conv_dim", required=True)
    return MambaGeometry("short_conv", width, 0, get_dim("conv_L_cache", 3),
                         conv_bias=bool(get("conv_bias", False)))


def lfm2_fields(model_type: str, n: int, get, get_dim, source: str) -> dict[str, Any]:
    """The geometry's fields LFM2 sets its own way: the dense MLP's width, the head tied
    (always, in vLLM), and LFM2-MoE's experts: a sparse block in every
    layer from ``num_dense_layers`` (2) on, its router's float32 ``e_score_correction_bias``
    with ``use_expert_bias`` (true), the dense layers' MLP ``intermediate_size`` wide as given."""
    tie = True
    if model_type == "lfm2":
        return {"intermediate_size": lfm2_ff(get, get_dim, source), "tie_word_embeddings": tie,
                "mlp_input_size": get_dim("block_dim", required=True)}
    dense = get("num_dense_layers", 2)
    if type(dense) is not int or dense < 0:
        raise InputError(f"expected a non-negative integer, got {dense!r}", path=source or None,
                         field="num_dense_layers")
    return {"intermediate_size": get_dim("intermediate_size", required=True),
            "tie_word_embeddings": tie, "moe_layers": tuple(i >= dense for i in range(n)),
            "router_score_bias": bool(get("use_expert_bias", True))}


def lfm2_ff(get, get_dim, source: str) -> int:
    """The feed-forward's width as `Lfm2MLP` computes it."""
    get_dim("block_dim", required=True)     # (vLLM's AttributeError without it)
    # (Lfm2Config pops the older key block_ff_dim into intermediate_size)
    ff = get_dim("block_ff_dim") or get_dim("intermediate_size", required=True)
    if not get("block_auto_adjust_ff_dim", True):
        return ff
    ff = int(2 * ff / 3)
    mult = get("block_ffn_dim_multiplier")
    if mult is not None:
        if not isinstance(mult, (int, float)) or isinstance(mult, bool) or not mult > 0:
            raise InputError(f"expected a positive number, got {mult!r}", path=source or None,
                             field="block_ffn_dim_multiplier")
        if not mult * ff < 2**63:     # (inf, or 1e308: int() of it was an OverflowError)
            raise InputError(f"makes the feed-forward {mult * ff:.6g} wide, past 2^63",
                             path=source or None, field="block_ffn_dim_multiplier")
        ff = int(mult * ff)
    step = get_dim("block_multiple_of", 256)
    return step * -(-ff // step)
