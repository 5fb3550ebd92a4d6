"""Xiaomi MiMo-V2 (`mimo_v2_flash`: MiMo-V2-Flash's MiMoV2FlashForCausalLM; `mimo_v2`: the
Pro / V2.5 checkpoints' MiMoV2ForCausalLM) as vLLM 0.33's mimo_v2.py builds it.

``hybrid_layer_pattern[i] == 1`` makes layer i a sliding layer with keys of its own:
``swa_num_attention_heads``, ``swa_num_key_value_heads``, ``swa_head_dim``, values
``swa_v_head_dim`` wide (else the keys' width), a window of ``sliding_window_size`` exactly (no
+1; -1: none), and, where ``add_swa_attention_sink_bias``, one sink a query head; the other
layers attend fully with ``num_attention_heads``, ``num_key_value_heads``, ``head_dim`` and
``v_head_dim``. Values narrower than keys make a page ``heads x (K + V)`` wide (the spec's
``head_size_v``); full and sliding pages that differ are unified by raising the smaller one's
block size (`kvcore.sizing.grouping`). ``moe_layer_freq`` as a list marks the MoE layers (an
int or no key: none), each with a float32 router (``moe_router_dtype``) and float32 score bias,
no shared expert. The config's ``attention_chunk_size`` and ``sliding_window`` are not read
(vLLM's MimoV2 convertor drops the one, the layers ignore the other). Defaults: transformers'
MiMoV2FlashConfig for ``mimo_v2_flash``; none for ``mimo_v2`` (its config is remote code).
Checked on the meta device, every rank: tests/data/mimo_v2/.
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models import fp8_scales, fp8_shapes
from kvcore.models import rank_params as rp
from kvcore.models.geometry import ModelGeometry
from kvcore.models.rank_params import Ledger
from kvcore.models.rope_cache import RopeCache

MIMO_V2_TYPES = ("mimo_v2_flash", "mimo_v2")
# the window's key (hf_config reads it for the sliding layers `mimo_kinds` marks)
WINDOW_KEYS = dict.fromkeys(MIMO_V2_TYPES, "sliding_window_size")
# transformers 5.20.2's MiMoV2FlashConfig, for the keys read here (no swa_* defaults)
FLASH_DEFAULTS: dict[str, Any] = {
    "head_dim": 192, "v_head_dim": 128, "n_routed_experts": 256, "num_experts_per_tok": 8,
    "moe_intermediate_size": 2048, "intermediate_size": 16384, "vocab_size": 152576,
    "num_key_value_heads": 4, "max_position_embeddings": 131072}


def _pattern(c: dict[str, Any], n: int, source: str) -> list[Any]:
    pattern = c.get("hybrid_layer_pattern")
    if not isinstance(pattern, list) or len(pattern) < n:
        # (vLLM indexes it by layer: no list, or a short one, fails the build)
        raise InputError(f"expected a list of at least {n} entries (num_hidden_layers), got "
                         f"{clipped(pattern)}: vLLM's mimo_v2.py reads it by layer",
                         path=source or None, field="hybrid_layer_pattern")
    return pattern


def mimo_kinds(c: dict[str, Any], n: int, source: str) -> tuple[str, ...]:
    """Each layer's kind: sliding where the pattern says 1 and a window is set."""
    pattern = _pattern(c, n, source)
    window = c.get("sliding_window_size")
    if any(pattern[i] == 1 for i in range(n)) and (
            not isinstance(window, int) or isinstance(window, bool) or window < -1):
        # (the sliding layers compare it with -1: a null fails the build)
        raise InputError(f"expected an integer (-1: no window), got {clipped(window)}: the "
                         "sliding layers of vLLM's mimo_v2.py read it", path=source or None,
                         field="sliding_window_size")
    return tuple("sliding" if pattern[i] == 1 and window != -1 else "full" for i in range(n))


def mimo_fields(c: dict[str, Any], get, get_dim, n: int, source: str) -> dict[str, Any]:
    """The geometry's MiMo-V2 parts: per layer query heads, (KV heads, K width), V width and
    sinks; the MoE layers."""
    pattern = _pattern(c, n, source)
    swa = [pattern[i] == 1 for i in range(n)]
    full_k = get_dim("head_dim", required=True)
    swa_k = get_dim("swa_head_dim", required=any(swa))
    full = (get_dim("num_attention_heads", required=True),
            get_dim("num_key_value_heads", required=True), full_k, get_dim("v_head_dim", full_k))
    sliding = ((get_dim("swa_num_attention_heads", required=True),
                get_dim("swa_num_key_value_heads", required=True), swa_k,
                get_dim("swa_v_head_dim", swa_k)) if any(swa) else full)
    for heads, kv, _, _ in (full, sliding):
        if heads % kv:      # (the attention layer asserts it)
            raise InputError(f"{kv} KV heads do not divide the {heads} attention heads, as "
                             "vLLM's attention layer requires", path=source or None,
                             field="swa_num_key_value_heads" if heads == sliding[0]
                             else "num_key_value_heads")
    if get("hidden_act", "silu") != "silu":
        raise InputError(f"expected silu, got {clipped(get('hidden_act'))}: vLLM's mimo_v2.py "
                         "supports no other", path=source or None, field="hidden_act")
    freq = c.get("moe_layer_freq")
    moe = tuple(isinstance(freq, list) and i < len(freq) and bool(freq[i]) for i in range(n))
    per_layer = [sliding if s else full for s in swa]
    return {"layer_heads": tuple(p[0] for p in per_layer),
            "layer_dims": tuple((p[1], p[2]) for p in per_layer),
            "layer_v_dims": tuple(p[3] for p in per_layer), "moe_layers": moe,
            "sink_layers": tuple(s and bool(get("add_swa_attention_sink_bias", False))
                                 for s in swa),
            "fp32_router": get("moe_router_dtype", "float32") == "float32",
            "num_shared_experts": 0, "shared_expert_width": 0,
            # (the layer's test: the quant_config has a weight_block_size)
            "fused_qkv_chunks": full[1] if get("attention_projection_layout") == "fused_qkv"
            and isinstance(get("quantization_config"), dict)
            and get("quantization_config").get("weight_block_size") else 0}


def refuse_mimo_tp(g: ModelGeometry, tp: int) -> None:
    """vLLM's refusal of a layer whose own heads ``tp`` does not split: the sliding layers'
    swa_* counts are not the config's top-level ones ModelConfig checks. Layer by layer, each
    QKVParallelLinear divides the query heads, then the KV heads (or the ranks by them, where
    fewer: each replicated), and asserts "N is not divisible by M" (tests/data/mimo_v2/,
    tiny-mimo-v2-swa-heads)."""
    for i, (heads, (kv, _)) in enumerate(zip(g.layer_heads, g.layer_dims, strict=True)):
        swa = "swa_" if g.layer_kinds[i] == "sliding" else ""
        for what, n, d in ((f"{heads} attention heads ({swa}num_attention_heads)", heads, tp),
                           (f"{kv} KV heads ({swa}num_key_value_heads)",
                            *((tp, kv) if tp >= kv else (kv, tp)))):
            if n % d:
                raise InputError(f"{g.name}'s layer {i} has {what}, which do not split over "
                                 f"the ranks, and vLLM refuses to build it: '{n} is not "
                                 f"divisible by {d}'; got {tp}", field="tensor_parallel_size")
        if g.moe_layers[i] and tp > g.num_experts:
            return      # (its MoE block refuses next: tp_refusals' words)


def unmodelled(g: ModelGeometry) -> str:
    """Why the weights of a quantised checkpoint are not counted ("": they are): fp8 in
    blocks with nothing left unquantised is (tests/data/mimo_v2/, the *-fp8 configs)."""
    if not g.quantization or (g.quantization == "fp8" and g.fp8_block is not None
                              and not g.fp8_ignored):
        return ""
    return "a quantised MiMo-V2 checkpoint's weights (kvcli counts fp8 in blocks, none ignored)"


def _kv_chunk_rows(g: ModelGeometry, i: int, tp: int) -> int:
    """A fused-QKV fp8 checkpoint's padded K | V rows a chunk (0: the plain [Q | K | V]),
    as mimo_v2.py's _fused_qkv_kv_chunk_rows: several chunks a rank whose K and V rows share
    a 128-row scale block."""
    chunks, heads = g.fused_qkv_chunks, g.layer_heads[i]
    (kv, k), v = g.layer_dims[i], g.layer_v_dims[i]
    if not chunks or chunks <= tp or chunks % tp or heads % chunks or kv % chunks:
        return 0
    q_rows, k_rows, v_rows = heads // chunks * k, kv // chunks * k, kv // chunks * v
    if q_rows % 128 or (k_rows % 128 == 0 and v_rows % 128 == 0):
        return 0
    return -(-(k_rows + v_rows) // 128) * 128


def mimo_rope_caches(c: dict[str, Any], g: ModelGeometry, get) -> tuple[RopeCache, ...]:
    """get_rope's caches, one a distinct (head size, rotary dim, base): max_position rows of
    the rotary dim int(head x partial_rotary_factor) rounded up to even (the cos and sin of its
    ceil(dim / 2) frequencies); the sliding layers' base swa_rope_theta."""
    out: dict[str, RopeCache] = {}
    factor, theta = get("partial_rotary_factor", 1.0), get("rope_theta", 1000000)
    pattern = _pattern(c, g.num_layers, g.source)
    for i, kind in enumerate(g.layer_kinds):
        head, dim = g.layer_dims[i][1], int(g.layer_dims[i][1] * factor)
        key = repr((head, dim, float(get("swa_rope_theta", theta) if pattern[i] == 1
                                     else theta)))
        kinds = out[key].kinds if key in out else ()
        out[key] = RopeCache(g.max_position_embeddings, dim + dim % 2, g.dtype, key,
                             g.max_position_embeddings, 1.0,
                             kinds if kind in kinds else (*kinds, kind))
    return tuple(out.values())


def mimo_linears(g: ModelGeometry, i: int, tp: int) -> list[fp8_scales.Linear]:
    """Layer i's linears on a rank but the routed experts, as vLLM builds them: QKV (values
    their own width; a fused-QKV fp8 checkpoint's padded K | V chunks), o_proj from the heads'
    values, a dense layer's MLP (what an fp8 checkpoint quantises and fp8_shapes checks)."""
    h = g.hidden_size
    (kv_heads, k), v = g.layer_dims[i], g.layer_v_dims[i]
    q, kv = g.layer_heads[i] // tp, rp.on_rank(kv_heads, tp)
    chunk_rows = _kv_chunk_rows(g, i, tp)
    parts = (q * k, g.fused_qkv_chunks * chunk_rows // tp) if chunk_rows else (
        q * k, kv * k, kv * v)
    out: list[fp8_scales.Linear] = [("qkv_proj", parts, h, "column"),
                                    ("o_proj", (h,), q * v, "row")]
    if not g.moe_layers[i]:
        width = g.intermediate_size // tp
        out += [("gate_up_proj", (width, width), h, "column"), ("down_proj", (h,), width, "row")]
    return out


def mimo_ledger(g: ModelGeometry, tp: int, layers: range | None = None, first: bool = True,
                last: bool = True) -> Ledger:
    """One of ``tp`` ranks' parameters: the decoder `layers` (None: all), the embedding where
    `first` (and on the last stage where the head is tied: vLLM builds it there too), the LM
    head and final norm where `last`. An fp8 checkpoint's linears and experts 1 byte a weight
    with float32 128 x 128 block scales, and 4 attention scales in the model dtype a layer."""
    h, e = g.hidden_size, g.num_experts
    led = Ledger()
    embed = first or (g.tie_word_embeddings and last)
    led.model += rp.vocab_rows(g, tp) * h * (embed + last) + h * last
    for i, moe in enumerate(g.moe_layers):
        if layers is not None and i not in layers:
            continue
        linears = mimo_linears(g, i, tp)
        led.layer += sum(sum(parts) * inp for _, parts, inp, _ in linears)
        qkv = sum(linears[0][1])
        led.model += (qkv if g.attention_bias else 0) + 2 * h + (
            g.layer_heads[i] // tp if g.sink_layers[i] else 0)
        if moe:
            router = e * h
            led.fp32 += e + (router if g.fp32_router else 0)
            led.model += 0 if g.fp32_router else router
            led.layer += 3 * h * e * g.moe_intermediate_size // tp
        if g.quantization == "fp8" and g.fp8_block is not None:
            led.fp32 += fp8_scales.scales(linears, g.fp8_block) + (
                fp8_shapes.expert_scales(g, tp, g.fp8_block) if moe else 0)
            led.model += 4
    return led
