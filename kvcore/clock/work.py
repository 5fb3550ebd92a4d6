"""The work the roofline clock times: FLOPs and bytes of one step per kernel group.

It starts from vLLM's counting (`vllm_count.py`: the same GEMMs, weights read once per step,
the same activation reads and writes, KV read for every request's whole context, one logit row
per request) and departs from it only where perf.py leaves real work out (tool/PERF.md):
* attention FLOPs are causal (a new token at position p attends to p tokens, clamped to the
  window or the local chunk), where perf.py bills every token against the whole context;
* the KV a prefill reads is at the KV cache's byte size (it is read from the paged cache);
* weights are at their real size: MXFP4 experts 4.25 bits (gpt-oss's attention stays in the
  model dtype), AWQ/GPTQ 4 bits plus a 16-bit scale per 128 weights, FP8 1 byte, whatever
  perf.py's table says (it drops those components for gpt-oss, AWQ, GPTQ and online fp8);
* Mamba layers are Mamba layers (their projections and per-request state read and write), not
  attention layers; MoE runs on the model's real MoE layers (Jamba: every other layer);
* the router's GEMM is counted.
Counts are per GPU under tensor parallelism (heads, FFN widths and vocab split; KV heads at
least one per GPU).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvcore.clock.batch import StepBatch
from kvcore.clock.vllm_count import KV_CACHE_DTYPES
from kvcore.models.geometry import ModelGeometry, mamba_state
from kvcore.models.weights import mamba_layer_params
from kvcore.specs import DTYPE_BYTES

MXFP4_BYTES = 4.25 / 8                  # 4 bits + one 8-bit scale per 32 values
INT4_GROUP_BYTES = (4 + 16 / 128) / 8   # AWQ / GPTQ: 4 bits + a 16-bit scale per 128 weights


@dataclass(frozen=True, slots=True)
class Component:
    name: str
    kind: str           # "gemm", "attention", "mamba" (sets the factors that time it)
    flops: int
    bytes: int
    layers: int         # kernel launches per step (floors are per launch)


@dataclass(frozen=True, slots=True)
class WorkShape:
    """A model's geometry on one GPU, as the clock times it."""
    g: ModelGeometry
    tp: int
    kv_bytes: int           # KV cache bytes per element
    act: int                # activation bytes
    attn_w: float           # attention weight bytes per parameter
    ffn_w: float            # dense MLP weight bytes
    expert_w: float         # MoE expert weight bytes
    fp8_compute: bool       # W8A8: GEMMs on the FP8 tensor cores

    @property
    def q_heads(self) -> int:
        return max(1, self.g.num_attention_heads // self.tp)

    @property
    def kv_heads(self) -> int:
        return max(1, self.g.num_kv_heads // self.tp)


def work_shape(g: ModelGeometry, *, tp: int = 1, kv_cache_dtype: str = "auto") -> WorkShape:
    a = DTYPE_BYTES[g.dtype]
    kv_dtype = KV_CACHE_DTYPES.get(kv_cache_dtype) or g.dtype
    q = g.quantization
    attn_w = ffn_w = expert_w = float(a)
    if q == "fp8":
        attn_w = ffn_w = expert_w = 1.0
    elif q in ("awq", "gptq", "awq_marlin", "gptq_marlin"):
        attn_w = ffn_w = expert_w = INT4_GROUP_BYTES
    elif q == "mxfp4":
        expert_w = MXFP4_BYTES              # attention, router, embeddings stay unquantised
    return WorkShape(g, tp, DTYPE_BYTES[kv_dtype], a, attn_w, ffn_w, expert_w, q == "fp8")


def _window_sum(lo: int, hi: int, w: int) -> int:
    """sum of min(p, w) for p in (lo, hi]."""
    if hi <= lo:
        return 0
    below = min(hi, w)
    s = (below * (below + 1) - lo * (lo + 1)) // 2 if below > lo else 0
    return s + w * max(0, hi - max(lo, w))


def _chunk_sum(lo: int, hi: int, ch: int) -> int:
    """sum of ((p - 1) % ch) + 1 for p in (lo, hi]: a token's reach in chunked local attention."""
    def upto(n: int) -> int:
        full, rest = divmod(n, ch)
        return full * ch * (ch + 1) // 2 + rest * (rest + 1) // 2
    return upto(hi) - upto(lo)


def _chunk_ctx(c: int, ch: int) -> int:
    return ((c - 1) % ch) + 1 if c > 0 else 0


@dataclass(slots=True)
class _Agg:
    tokens: int = 0
    reqs: int = 0
    full_pairs: int = 0     # causal (query, key) pairs, full attention
    win_pairs: int = 0
    chunk_pairs: int = 0
    full_ctx: int = 0       # KV tokens read
    win_ctx: int = 0
    chunk_ctx: int = 0


def _aggregate(ws: WorkShape, batch: StepBatch) -> _Agg:
    g = ws.g
    w, ch = g.sliding_window or 0, g.attention_chunk_size or 0
    s = _Agg()
    for t, c_after, _ in batch.requests:
        if t == 0:
            continue
        c = c_after - t
        s.tokens += t
        s.reqs += 1
        s.full_pairs += t * c + t * (t + 1) // 2
        s.full_ctx += c_after
        if w:
            s.win_pairs += _window_sum(c, c_after, w)
            s.win_ctx += min(c_after, w)
        if ch:
            s.chunk_pairs += _chunk_sum(c, c_after, ch)
            s.chunk_ctx += _chunk_ctx(c_after, ch)
    n, ctx = batch.agg_decodes, batch.agg_context
    if n:
        if w or ch:
            raise ValueError("windowed layers need each decode's context (no aggregate)")
        s.tokens += n
        s.reqs += n
        s.full_pairs += ctx         # one query token at position C attends to C keys
        s.full_ctx += ctx
    return s


def step_work(ws: WorkShape, batch: StepBatch) -> list[Component]:
    """The step's kernel groups, per GPU (summed over layers)."""
    g, a, tp = ws.g, ws.act, ws.tp
    s = _aggregate(ws, batch)
    T, R = s.tokens, s.reqs
    D, d, q, kv = g.hidden_size, g.head_dim, ws.q_heads, ws.kv_heads
    n_full, n_win, n_chunk = g.count("full"), g.count("sliding"), g.count("chunked")
    n_attn = n_full + n_win + n_chunk
    n_mamba = g.count("mamba")
    qkv_cols = (q + 2 * kv) * d
    out: list[Component] = []
    if n_attn:
        out.append(Component(
            "qkv_proj", "gemm", 2 * T * D * qkv_cols * n_attn,
            int(D * qkv_cols * ws.attn_w * n_attn) + (T * D + T * qkv_cols) * a * n_attn, n_attn))
        pairs = s.full_pairs * n_full + s.win_pairs * n_win + s.chunk_pairs * n_chunk
        ctx = s.full_ctx * n_full + s.win_ctx * n_win + s.chunk_ctx * n_chunk
        out.append(Component(
            "attention", "attention", 4 * q * d * pairs,
            2 * kv * d * ws.kv_bytes * ctx + 2 * T * q * d * a * n_attn
            + 2 * T * kv * d * ws.kv_bytes * n_attn, n_attn))
        out.append(Component(
            "o_proj", "gemm", 2 * T * q * d * D * n_attn,
            int(q * d * D * ws.attn_w * n_attn) + (T * q * d + T * D) * a * n_attn, n_attn))
    if n_mamba and g.mamba is not None:
        params = mamba_layer_params(g) // tp
        shapes, _ = mamba_state(g.mamba, g.dtype, tp)
        state = 0
        for shape in shapes:
            size = 1
            for dim in shape:
                size *= dim
            state += size * a
        out.append(Component(
            "mamba", "mamba", 2 * T * params * n_mamba,
            int(params * ws.attn_w * n_mamba) + (2 * R * state + 2 * T * D * a) * n_mamba,
            n_mamba))
    n_moe = sum(1 for m in g.moe_layers if m) if g.num_experts else 0
    n_dense = g.num_layers - n_moe if g.intermediate_size else 0
    if n_dense:
        di = g.intermediate_size // tp
        out.append(Component(
            "mlp", "gemm", 6 * T * D * di * n_dense,
            int(3 * D * di * ws.ffn_w * n_dense)
            + (2 * T * D + 6 * T * di) * a * n_dense, n_dense))
    if n_moe:
        k, E = g.num_experts_per_tok or 1, g.num_experts
        mi = (g.moe_intermediate_size or g.intermediate_size) // tp
        routed = T * k
        active = min(routed, E)             # vLLM's perfect-balance count (perf.py)
        shared = g.num_shared_experts
        out.append(Component(
            "moe", "gemm", (6 * D * mi * (routed + shared * T) + 2 * T * D * E) * n_moe,
            int(3 * D * mi * (active + shared) * ws.expert_w * n_moe) + D * E * a * n_moe
            + (2 * T * D + 2 * routed * D + 6 * (routed + shared * T) * mi) * a * n_moe,
            n_moe))
    v = g.vocab_size // tp
    out.append(Component("lm_head", "gemm", 2 * R * D * v,
                         D * v * a + R * D * a + R * v * a, 1))
    return out


def allreduce_bytes(ws: WorkShape, batch: StepBatch) -> tuple[int, int]:
    """(all-reduces per step, bytes each) under tensor parallelism: one after the attention
    output projection (or the Mamba output) and one after the MLP / MoE of every layer."""
    if ws.tp <= 1:
        return 0, 0
    return 2 * ws.g.num_layers, batch.num_tokens * ws.g.hidden_size * ws.act
