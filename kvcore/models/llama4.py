"""Llama 4's layers as vLLM 0.33 builds them (`llama4.py`): a RoPE layer
(``no_rope_layers[i]`` not 0) attends in local chunks of ``attention_chunk_size`` tokens, a NoPE
layer (the flag 0) attends globally; with no chunk size (null or 0) every layer attends globally.

vLLM reads both from transformers' `Llama4TextConfig`, which fills them in: a missing or empty
``no_rope_layers`` becomes a NoPE layer every ``no_rope_layer_interval`` (4) layers (layer i is
NoPE when (i + 1) is a multiple of it), and a missing ``attention_chunk_size`` is 8,192. The real
Llama-4-Scout config gives ``"no_rope_layers": []``: read as given, it sized every layer as full
attention (48 layers' KV for the whole context where vLLM keeps 12, and 36 of 8,192 tokens).
``layer_types`` is not read: vLLM's attention layers look at ``no_rope_layers`` alone.

Its feed-forward (`Llama4DecoderLayer`): layer i is MoE when ``interleave_moe_layer_step`` > 0
and (i + 1) is a multiple of it, else a dense gated MLP ``intermediate_size_mlp`` wide; the
config's ``moe_layers`` list is not read. Maverick's step 2 makes every second layer dense,
16,384 wide: read as all MoE, its 400B checkpoint counted 24 layers of 128 experts too many.
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError

CHUNK_DEFAULT = 8192            # Llama4TextConfig.attention_chunk_size
NOPE_INTERVAL_DEFAULT = 4       # Llama4TextConfig.no_rope_layer_interval
MOE_STEP_DEFAULT = 1            # Llama4TextConfig.interleave_moe_layer_step
MLP_WIDTH_DEFAULT = 16384       # Llama4TextConfig.intermediate_size_mlp (the dense layers')
EXPERTS_DEFAULT = 16            # Llama4TextConfig.num_local_experts


def llama4_kinds(c: dict[str, Any], n: int, get_dim, source: str) -> tuple[str, ...]:
    """Each layer's kind: ``chunked`` (RoPE) or ``full`` (NoPE, or no chunk size)."""
    flags = c.get("no_rope_layers")
    if not flags:       # (None or []: Llama4TextConfig's own list)
        every = get_dim("no_rope_layer_interval", NOPE_INTERVAL_DEFAULT)
        flags = [int((i + 1) % every != 0) for i in range(n)]
    if not isinstance(flags, list) or len(flags) != n or not all(
            isinstance(f, int) for f in flags):
        raise InputError(f"must list {n} integer flags (num_hidden_layers; 0: a NoPE layer), "
                         f"got {str(flags)[:40]}", path=source or None, field="no_rope_layers")
    if "attention_chunk_size" in c and not c["attention_chunk_size"]:
        # vLLM's layers chunk only when it is truthy (`use_chunked_local_attn`): null or 0 given
        # means every layer attends globally
        return ("full",) * n
    return tuple("full" if f == 0 else "chunked" for f in flags)


def llama4_moe_layers(get_int, n: int) -> tuple[bool, ...]:
    """Which layers vLLM builds as `Llama4MoE` (the others: a dense `LlamaMLP`)."""
    step = get_int("interleave_moe_layer_step", MOE_STEP_DEFAULT)
    return tuple(step > 0 and (i + 1) % step == 0 for i in range(n))
