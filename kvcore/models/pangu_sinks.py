"""openPangu Pro MoE V2's static-sink attention (vLLM 0.33's PanguProMoEV2ForCausalLM,
openpangu.py's OpenPanguSinkAttention), read from its config: keys ``qk_nope_dim`` +
``qk_rope_dim`` wide (the RoPE on the last ``qk_rope_dim``), values ``v_channels`` wide, and
``param_sink_number`` learned sink keys (values too with ``param_sink_with_value``, else a
zero buffer) a layer that StaticSinkAttention writes into the cache once. Its KV cache spec is
a SinkFullAttentionSpec: a FullAttentionSpec (page: K and V widths added) whose manager,
SinkFullAttentionManager, is FullAttentionManager's with one assertion (``sink_len`` whole
blocks); ``interleaved_sliding_window`` reaches the attention kernel, never the spec.
Checked on the meta device: tests/data/refused_lifted/. vLLM 0.33 plans its pool but cannot
build that manager, so a run is refused (`refuse_sink_run`; tests/data/sched_lifted/).

Without ``param_sink_number`` the class builds other layers (MLA with MLA's keys, else plain
attention with ``interleaved_sliding_window`` windows): refused, unrecorded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kvcore.errors import InputError, clipped

PANGU_V2 = "PanguProMoEV2ForCausalLM"
# (the keys that make OpenPanguDecoderLayer build MLA, which it tries before sink attention)
_MLA_KEYS = ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "kv_lora_rank")


@dataclass(frozen=True, slots=True)
class PanguSinks:
    sinks: int              # param_sink_number: sink tokens a layer
    sink_values: bool       # param_sink_with_value: the sink values a parameter (else a buffer)
    rope_dim: int           # qk_rope_dim: the rotated part of a head
    qkv_bias: bool          # (qkv_bias, else attention_bias or bias)
    o_bias: bool            # (attention_bias or bias)


def _width(get: Callable[..., Any], key: str, source: str, least: int = 1) -> int:
    v = get(key)
    if type(v) is not int or v < least:
        raise InputError(f"expected an integer >= {least}, got {clipped(v)}",
                         path=source or None, field=key)
    return int(v)


def pangu_sink_fields(c: dict[str, Any], get: Callable[..., Any], n: int,
                      source: str) -> dict[str, Any]:
    """The geometry's fields for sink attention: its head size and V width a layer."""
    if any(k in c for k in _MLA_KEYS) or not c.get("param_sink_number"):
        raise InputError("kvcli models PanguProMoEV2ForCausalLM's sink attention only (a "
                         "param_sink_number > 0, none of MLA's keys); its MLA and windowed "
                         "plain-attention layers are unchecked against vLLM",
                         path=source or None, field="param_sink_number")
    rope = _width(get, "qk_rope_dim", source)
    head = _width(get, "qk_nope_dim", source, 0) + rope
    v = _width(get, "v_channels", source)
    biased = bool(get("attention_bias", False) or get("bias", False))
    sinks = PanguSinks(_width(get, "param_sink_number", source), bool(
        get("param_sink_with_value", False)), rope, bool(get("qkv_bias", biased)), biased)
    return {"head_dim": head, "layer_v_dims": (v,) * n, "pangu_sinks": sinks}


def refuse_sink_block(s: PanguSinks, block_size: int) -> None:
    """SinkFullAttentionManager asserts the sinks fill whole blocks: vLLM fails to start."""
    if s.sinks % block_size:
        raise InputError(f"{block_size}: PanguProMoEV2ForCausalLM's {s.sinks} sink tokens "
                         "(param_sink_number) must fill whole blocks, as vLLM 0.33's "
                         "SinkFullAttentionManager asserts (it fails to start)",
                         field="block_size")


def refuse_sink_run(g: Any, field: str) -> None:
    """A run of the KV cache manager (replay in either mode, a script) over sink attention's
    layers: vLLM 0.33 plans the pool (`kvcli config` sizes it) but its engine fails to start.
    Its coordinator (v1/core/kv_cache_coordinator.py) builds every group's manager with
    ``needs_kv_cache_zeroing``, which SinkFullAttentionManager's ``__init__``
    (v1/core/single_type_kv_cache_manager.py) does not take: a TypeError when the Scheduler,
    or a bare KVCacheManager, is built (tests/data/sched_lifted: every trace; and
    tests/data/managers_033's sink groups)."""
    if getattr(g, "pangu_sinks", None) is not None:
        raise InputError(f"{g.name}: PanguProMoEV2ForCausalLM's sink attention cannot run: "
                         f"vLLM 0.33 fails to start, {_NO_START}; `kvcli config` sizes it as "
                         "vLLM plans it", field=field)


def sink_start_note(g: Any) -> str | None:
    """`kvcli config`'s warning for sink attention: the pool is vLLM's plan, which its engine
    computes (and logs) before it fails building the managers (`refuse_sink_run`)."""
    if getattr(g, "pangu_sinks", None) is None:
        return None
    return (f"{g.name}: sized as vLLM 0.33 plans it, but vLLM then fails to start, "
            f"{_NO_START} (kvcli replay refuses it)")


_NO_START = ("its SinkFullAttentionManager cannot be built (TypeError: unexpected keyword "
             "argument 'needs_kv_cache_zeroing')")
