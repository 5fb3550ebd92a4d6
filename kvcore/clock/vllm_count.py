"""Work per engine step exactly as vLLM 0.33 counts it (`vllm/v1/metrics/perf.py`, the numbers
behind `--enable-mfu-metrics`): FLOPs, read bytes and write bytes per GPU, by operation.

This is the parity count, not what the roofline times (`kvcore.clock.work`): it keeps perf.py's
simplifications on purpose (attention billed against the whole context, not causally; prefill KV
read at the activation byte size; a hybrid's Mamba layers billed as attention layers; quantised
methods missing from perf.py's byte-size table drop the attention and FFN components, so
gpt-oss's MXFP4, AWQ, GPTQ and online fp8 count the unembedding only; the components perf.py
cannot build for a model dropped too, all of an attention-free Mamba's:
`kvcore.clock.perf_components`). MLA models (DeepSeek, Kimi-K2) take
perf.py's `mla_attn` component (`kvcore.clock.mla_count`) instead of `attn`; the `ffn`
component is `kvcore.clock.ffn_count`.
`tests/test_vllm_count.py` checks every key against the oracle's recordings.

Arithmetic follows perf.py's: attention terms are products with float layer counts truncated by
`int()` (so exact below 2**53 and rounded as vLLM rounds above it), FFN and unembedding terms
integers except where a 0.5-byte weight makes them float.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvcore.clock.batch import StepBatch
from kvcore.clock.ffn_count import ffn
from kvcore.clock.kv_dtypes import KV_CACHE_DTYPES
from kvcore.clock.mla_count import mla_attention
from kvcore.clock.perf_components import (
    PERF_COMPONENTS,
    attention_dims,
    built_components,
    experts_seen,
    swa_layers,
)
from kvcore.errors import InputError
from kvcore.models.geometry import MlaGeometry, ModelGeometry
from kvcore.models.kv_cache_quant import engine_kv_dtype
from kvcore.models.nemotron_h import PERF_EXPERT_DEFAULTS
from kvcore.models.quantization import auto_kv_dtype
from kvcore.models.sparse_mla import refuse_ds_mla
from kvcore.specs import DTYPE_BYTES

# perf.py's `_QUANT_WEIGHT_BYTE_SIZE`: the weight byte size per quantisation config name.
QUANT_WEIGHT_BYTES: dict[str, float] = {
    **dict.fromkeys(("fp8", "fbgemm_fp8", "ptpc_fp8", "fp_quant", "modelopt", "modelopt_mxfp8",
                     "experts_int8"), 1),
    **dict.fromkeys(("mxfp4", "awq", "awq_marlin", "gptq", "gptq_marlin", "modelopt_fp4",
                     "petit_nvfp4", "compressed-tensors", "torchao", "quark", "moe_wna16",
                     "inc"), 0.5),
}
# The name vLLM 0.33's config resolution gives a checkpoint's `quant_method` on a GPU (what
# perf.py looks up): these resolve to names its table lacks (tool/PERF.md, surprise 1).
RESOLVED_QUANT_NAME = {"awq": "auto_awq", "gptq": "auto_gptq"}


def resolved_quant_name(g: ModelGeometry, online: str | None = None) -> str | None:
    """`vllm_config.quant_config.get_name()` for this model: None unquantised; ``online`` is
    vLLM's --quantization for a checkpoint without a quantization_config (fp8 resolves to
    "online")."""
    method = g.quantization
    if method is None:
        return None if online is None else ("online" if online in ("fp8", "fp8_per_tensor")
                                             else online)
    if method == "mxfp4" and g.model_type == "gpt_oss":
        return "gpt_oss_mxfp4"
    return RESOLVED_QUANT_NAME.get(method, method)


@dataclass(frozen=True, slots=True)
class VllmShape:
    """The geometry perf.py parses (the oracle header's `components`), per its parsers."""
    num_hidden_layers: int
    hidden_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    activation_byte_size: int
    cache_byte_size: int
    model_weight_byte_size: int          # the unembedding's (always the model dtype)
    weight_byte_size: float | None       # attention and FFN; None: perf.py drops them
    sliding_window: int | None
    num_swa_layers: int
    intermediate_size: int
    num_experts: int
    num_experts_per_tok: int
    moe_intermediate_size: int
    num_shared_experts: int
    num_moe_layers: int
    tp_size: int = 1
    pp_size: int = 1
    dp_size: int = 1
    enable_ep: bool = False
    quant_name: str | None = None
    mla: MlaGeometry | None = None       # perf.py's `is_deepseek_mla`: `mla_attn`, not `attn`
    # the components perf.py builds (`kvcore.clock.perf_components`: a Mamba model none)
    components: tuple[str, ...] = PERF_COMPONENTS

    @property
    def ffn_tp_size(self) -> int:
        return 1 if self.enable_ep else self.dp_size * self.tp_size

    @property
    def ffn_ep_size(self) -> int:
        return self.dp_size * self.tp_size if self.enable_ep else 1


def vllm_shape(g: ModelGeometry, *, tp: int = 1, kv_cache_dtype: str = "auto",
               enable_ep: bool = False, online_quant: str | None = None,
               quant_name: str | None = None) -> VllmShape:
    """What perf.py parses from this model's config (``quant_name`` replaces the resolved
    quantisation name: the oracle's `counterfactual_quant_method`)."""
    if kv_cache_dtype not in KV_CACHE_DTYPES:
        raise InputError(f"unknown KV cache dtype {kv_cache_dtype!r}; one of "
                         f"{', '.join(KV_CACHE_DTYPES)}", field="kv_cache_dtype")
    refuse_ds_mla(g, kv_cache_dtype)
    a = DTYPE_BYTES[g.dtype]
    # (perf.py reads the cache dtype vLLM resolved: a ModelOpt checkpoint's "auto" its algorithm;
    # a compressed-tensors kv_cache_scheme's fp8 at TP 1 only, `engine_kv_dtype`)
    kv = engine_kv_dtype(g, kv_cache_dtype, auto_kv_dtype(g, kv_cache_dtype), tp)
    kv_dtype = KV_CACHE_DTYPES[kv] or g.dtype
    name = quant_name if quant_name is not None else resolved_quant_name(g, online_quant)
    weight: float | None = a
    if name is not None:
        weight = QUANT_WEIGHT_BYTES.get(name)
    swa, window = swa_layers(g)
    # (the config's intermediate_size where it is not the MLP's: `kvcore.models.perf_widths`)
    width = g.intermediate_size if g.perf_intermediate is None else g.perf_intermediate
    kv_heads, head_dim = attention_dims(g)
    experts = {"num_experts": g.num_experts, "num_experts_per_tok": g.num_experts_per_tok,
               "moe_intermediate_size": g.moe_intermediate_size or width,
               "num_shared_experts": g.num_shared_experts,
               "num_moe_layers": g.counted_moe_layers}
    if class_experts(g):
        experts = {**PERF_EXPERT_DEFAULTS, "num_moe_layers": g.num_layers}
    elif not experts_seen(g):
        experts = dict.fromkeys(experts, 0)
    return VllmShape(
        num_hidden_layers=g.num_layers, hidden_size=g.hidden_size,
        num_attention_heads=g.num_attention_heads, num_key_value_heads=kv_heads,
        head_dim=head_dim, vocab_size=g.vocab_size, activation_byte_size=a,
        cache_byte_size=DTYPE_BYTES[kv_dtype], model_weight_byte_size=a,
        weight_byte_size=weight, sliding_window=window if swa else None, num_swa_layers=swa,
        intermediate_size=width or 4 * g.hidden_size,
        **experts, tp_size=tp, enable_ep=enable_ep, quant_name=name, mla=g.mla,
        components=built_components(g))


def class_experts(g: ModelGeometry) -> bool:
    """Whether perf.py bills this model's layers with its config class's default experts: a
    Nemotron-H config naming none (`nemotron_h.PERF_EXPERT_DEFAULTS`)."""
    return g.model_type == "nemotron_h" and not g.num_experts


@dataclass(slots=True)
class Counts:
    """perf.py's three breakdowns (keys ``component.operation``), and their totals."""
    flops: dict[str, int]
    read_bytes: dict[str, int]
    write_bytes: dict[str, int]

    @property
    def num_flops(self) -> int:
        return sum(self.flops.values())

    @property
    def num_read_bytes(self) -> int:
        return sum(self.read_bytes.values())

    @property
    def num_write_bytes(self) -> int:
        return sum(self.write_bytes.values())


@dataclass(slots=True)
class _Sums:
    """perf.py's `ExecutionContext` aggregates of one batch."""
    pf_reqs: int = 0
    pf_tokens: int = 0
    pf_ctx: int = 0
    dc_tokens: int = 0
    dc_ctx: int = 0
    tc: int = 0            # sum of t * C
    tc_swa: int = 0        # sum of t * min(C, W)
    pf_ctx_swa: int = 0
    dc_ctx_swa: int = 0

    @property
    def tokens(self) -> int:
        return self.pf_tokens + self.dc_tokens


def _sums(batch: StepBatch, window: int | None) -> _Sums:
    s = _Sums()
    for t, c, pf in batch.requests:
        if t == 0:
            continue            # perf.py skips a request with no scheduled token
        cw = c if window is None or c < window else window
        s.tc += t * c
        s.tc_swa += t * cw
        if pf:
            s.pf_reqs += 1
            s.pf_tokens += t
            s.pf_ctx += c
            s.pf_ctx_swa += cw
        else:
            s.dc_tokens += t
            s.dc_ctx += c
            s.dc_ctx_swa += cw
    if batch.agg_decodes:
        if window is not None:
            raise ValueError("a sliding window needs each decode's context (no aggregate)")
        s.dc_tokens += batch.agg_decodes
        s.dc_ctx += batch.agg_context
        s.tc += batch.agg_context
        s.tc_swa += batch.agg_context
        s.dc_ctx_swa += batch.agg_context
    return s


def vllm_counts(shape: VllmShape, batch: StepBatch) -> Counts:
    """`ModelMetrics.get_step_perf_stats_per_gpu` of this step: the breakdowns per GPU."""
    s = _sums(batch, shape.sliding_window if shape.num_swa_layers else None)
    out = Counts({}, {}, {})
    built = shape.components
    if shape.weight_byte_size is not None:
        if shape.mla is not None:
            mla_attention(shape, shape.mla, s, out)
        elif "attn" in built:
            _attention(shape, s, out)
        if "ffn" in built:
            ffn(shape, s, out)
    if "unembed" in built:
        _unembed(shape, s, out)
    return out


def _attention(sh: VllmShape, s: _Sums, out: Counts) -> None:
    D, d, tp = sh.hidden_size, sh.head_dim, sh.tp_size
    q = max(1, sh.num_attention_heads // tp)
    kv = max(1, sh.num_key_value_heads // tp)
    a, c, w = sh.activation_byte_size, sh.cache_byte_size, sh.weight_byte_size
    assert w is not None
    L = float(sh.num_hidden_layers) / sh.pp_size
    L_swa = float(sh.num_swa_layers) / sh.pp_size
    L_full = float(sh.num_hidden_layers - sh.num_swa_layers) / sh.pp_size
    T = s.tokens
    f = out.flops
    f["attn.qkv_proj"] = int(2 * T * D * (q + 2 * kv) * d * L)
    f["attn.out_proj"] = int(2 * T * D * q * d * L)
    core = 0.0
    if L_full > 0:
        core += 2 * q * s.tc * d * L_full
    if L_swa > 0 and sh.sliding_window is not None:
        core += 2 * q * s.tc_swa * d * L_swa
    f["attn.attn_qk"] = f["attn.attn_av"] = int(core)
    r = out.read_bytes
    r["attn.qkv_input"] = int(T * D * a * L)
    r["attn.qkv_weight"] = int(D * (q + 2 * kv) * d * w * L)
    kv_in = 0.0
    for layers, pf_ctx, dc_ctx in ((L_full, s.pf_ctx, s.dc_ctx),
                                   (L_swa, s.pf_ctx_swa, s.dc_ctx_swa)):
        if layers <= 0:
            continue
        if s.pf_tokens > 0:
            kv_in += (s.pf_tokens * q + 2 * pf_ctx * kv) * d * a * layers
        if s.dc_tokens > 0:
            kv_in += (s.dc_tokens * q * d * a * layers + 2 * dc_ctx * kv * d * c * layers)
    if T > 0:
        r["attn.attn_input"] = int(kv_in)
    r["attn.out_input"] = int(T * q * d * a * L)
    r["attn.out_weight"] = int(q * d * D * w * L)
    wr = out.write_bytes
    wr["attn.qkv_output"] = int(T * (q + 2 * kv) * d * a * L)
    wr["attn.kv_cache"] = int(2 * T * kv * d * c * L)
    wr["attn.out_output"] = int(T * D * a * L)


def _unembed(sh: VllmShape, s: _Sums, out: Counts) -> None:
    D, a = sh.hidden_size, sh.activation_byte_size
    V = sh.vocab_size // sh.tp_size
    R = s.pf_reqs + s.dc_tokens         # logit rows: one per prefill, one per decode token
    out.flops["unembed.unembed"] = 2 * R * D * V
    out.read_bytes["unembed.input"] = R * D * a
    out.read_bytes["unembed.weight"] = D * V * sh.model_weight_byte_size
    out.write_bytes["unembed.output"] = R * V * a
