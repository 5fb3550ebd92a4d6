"""openPangu Pro MoE V2's weights and buffers a rank (vLLM 0.33's PanguProMoEV2ForCausalLM;
its attention read in `kvcore.models.pangu_sinks`): a fused QKV projection (V ``v_channels``
wide), a head-wide k_layernorm, the sink keys (and values) a rank's KV heads, an output
projection from the V width; openPangu's norms, router and experts as Ultra MoE's
(`kvcore.models.openpangu`). Its RoPE rotates ``qk_rope_dim`` of a head over
``max_position_embeddings`` in the model dtype (get_rope given no theta: one cache).
"""

from __future__ import annotations

from kvcore.errors import InputError
from kvcore.models import rank_params as rp
from kvcore.models.geometry import ModelGeometry
from kvcore.models.pangu_sinks import PanguSinks
from kvcore.models.rank_params import Ledger
from kvcore.models.rope_cache import RopeCache
from kvcore.specs import DTYPE_BYTES


def refuse_sink_tp(g: ModelGeometry, s: PanguSinks, tp: int) -> None:
    """OpenPanguSinkAttention splits its KV heads and never replicates them."""
    if g.num_kv_heads < tp:
        raise InputError(f"{g.name}'s {g.num_kv_heads} KV heads are fewer than the ranks, and "
                         f"vLLM refuses to build it: 'Number of KV heads {g.num_kv_heads} is "
                         f"less than TP size {tp}, KV heads replication is not support yet.'; "
                         f"got {tp}", field="tensor_parallel_size")


def _attention(g: ModelGeometry, s: PanguSinks, tp: int, led: Ledger) -> None:
    h, d, v = g.hidden_size, g.head_dim, g.layer_v_dims[0]
    heads, kv = g.num_attention_heads // tp, g.num_kv_heads // tp
    qkv = heads * d + kv * d + kv * v
    led.layer += h * qkv + heads * v * h
    led.model += (qkv if s.qkv_bias else 0) + (h if s.o_bias else 0) + d   # (k_layernorm)
    led.model += s.sinks * kv * (d + (v if s.sink_values else 0))


def pangu_v2_ledger(g: ModelGeometry, s: PanguSinks, tp: int, layers: range | None,
                    first: bool, last: bool) -> Ledger:
    """One rank's parameters (of a pipeline stage: its `layers`, `first`, `last`)."""
    led = Ledger()
    vh = rp.vocab_rows(g, tp) * g.hidden_size
    if first and last:
        led.model += vh + (0 if g.tie_word_embeddings else vh) + rp.final_norm(g)
    else:   # (a tied head's last stage builds the embedding it shares)
        led.model += (vh if first else 0) + (vh + rp.final_norm(g) if last else 0)
    shared = rp.shared_width(g)
    for i in range(g.num_layers):
        if layers is not None and i not in layers:
            continue
        _attention(g, s, tp, led)
        led.model += rp.layer_norms(g)
        if g.moe_layers[i]:
            rp.moe(g, tp, shared, led)
        else:
            rp.dense_mlp(g, tp, led)
    return led


def sink_value_buffer_bytes(g: ModelGeometry, s: PanguSinks, tp: int, layers: int) -> int:
    """The zero sink values `layers` layers register where the checkpoint has none."""
    if s.sink_values:
        return 0
    return layers * s.sinks * g.num_kv_heads // tp * g.layer_v_dims[0] * DTYPE_BYTES[g.dtype]


def normed_sink_key_bytes(g: ModelGeometry, s: PanguSinks, tp: int, layers: int) -> int:
    """The sink keys through k_layernorm that `layers` layers keep (OpenPanguSinkAttention's
    post_weight_load, run as it is built and again after loading, hands StaticSinkAttention
    a new tensor, neither parameter nor buffer: a rank's KV heads x sinks x head, in the
    model dtype; recorded as `scratch` in tests/data/refused_lifted/answers.json)."""
    return layers * s.sinks * g.num_kv_heads // tp * g.head_dim * DTYPE_BYTES[g.dtype]


def pangu_v2_rope_caches(g: ModelGeometry, s: PanguSinks) -> tuple[RopeCache, ...]:
    """get_rope's one cache; its rotary width as vLLM computes it, through a float factor
    (``int(head * (rope / head))``: 15 of 22 rotates 14)."""
    pos, d = g.max_position_embeddings, g.head_dim
    rotary = int(d * (s.rope_dim / d))
    return (RopeCache(pos, rotary, g.dtype, f"pangu sink {d} {rotary}", pos, 1.0),)
