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
from kvcore.clock.kv_dtypes import KV_CACHE_DTYPES
from kvcore.clock.layer_blocks import layer_blocks
from kvcore.clock.linear_form import Group, dot, vec
from kvcore.clock.mla_work import mla_groups
from kvcore.models.geometry import ModelGeometry, mamba_state
from kvcore.models.mla import mla_decode_query_len
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
    # the longest query an MLA model runs on its decode path (`models.mla.mla_decode_query_len`:
    # the GPU's backend, with speculative decoding at least a verification's 1 + K tokens),
    # and whether a verification samples a logit row for each of its tokens
    mla_decode_tokens: int = 1
    verify_logits: bool = False
    spec_tokens: int = 0    # K: a Mamba2 / Gated DeltaNet conv state keeps K more rows

    @property
    def q_heads(self) -> int:
        return max(1, self.g.num_attention_heads // self.tp)

    @property
    def kv_heads(self) -> int:
        return max(1, self.g.num_kv_heads // self.tp)


def work_shape(g: ModelGeometry, *, tp: int = 1, kv_cache_dtype: str = "auto",
               spec_tokens: int = 0, verify_logits: bool | None = None,
               gpu: str | None = None) -> WorkShape:
    """A model's work shape on the preset `gpu` (its MLA backend's decode path; None: one-token
    queries); `spec_tokens` drafts verified a step (0: no speculative decoding) and whether
    their logits are the model's (a drafter's passes sample one a request)."""
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
    return WorkShape(g, tp, DTYPE_BYTES[kv_dtype], a, attn_w, ffn_w, expert_w, q == "fp8",
                     mla_decode_query_len(gpu, kv_cache_dtype, spec_tokens),
                     spec_tokens > 0 if verify_logits is None else verify_logits, spec_tokens)


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


def aggregate(ws: WorkShape, batch: StepBatch) -> tuple[int, ...]:
    """The step's `linear_form.AGGREGATES`."""
    g = ws.g
    w, ch = g.sliding_window or 0, g.attention_chunk_size or 0
    T = R = fp = wp = cp = fc = wc = cc = lc = pc = lp = rows = 0
    decode_path, verify = ws.mla_decode_tokens, ws.verify_logits
    for t, c_after, prefill in batch.requests:
        if t == 0:
            continue
        c = c_after - t
        T += t
        R += 1
        pairs = t * c + t * (t + 1) // 2
        fp += pairs
        fc += c_after
        rows += t if verify and not prefill else 1
        if t <= decode_path:
            lc += c_after
            lp += pairs
        else:
            pc += c
        if w:
            wp += _window_sum(c, c_after, w)
            wc += min(c_after, w)
        if ch:
            cp += _chunk_sum(c, c_after, ch)
            cc += _chunk_ctx(c_after, ch)
    n, ctx = batch.agg_decodes, batch.agg_context
    if n:
        if w or ch:
            raise ValueError("windowed layers need each decode's context (no aggregate)")
        T += n
        R += n
        fp += ctx               # one query token at position C attends to C keys
        fc += ctx
        lc += ctx
        lp += ctx
        rows += n
    active = min(T * (g.num_experts_per_tok or 1), g.num_experts)  # vLLM's perfect balance
    return (T, R, fp, wp, cp, fc, wc, cc, active, lc, pc, lp, rows)


def work_groups(ws: WorkShape) -> list[Group]:
    """The model's kernel groups on one GPU (summed over layers), as linear forms."""
    g, a, tp = ws.g, ws.act, ws.tp
    D, d, q, kv = g.hidden_size, g.head_dim, ws.q_heads, ws.kv_heads
    lb = layer_blocks(g)
    n_full, n_win, n_chunk, n_attn = lb.full, lb.sliding, lb.chunked, lb.attention
    # (an output gate: the QKV projection makes a second query-sized output, which the O
    # projection's input is multiplied by: read both, write the product)
    cols = (q * (2 if lb.output_gate else 1) + 2 * kv) * d
    kvb = 2 * kv * d * ws.kv_bytes
    out: list[Group] = mla_groups(ws) if g.mla is not None else []
    # (Zamba2's q, k and v are projected from the layer's input beside the embeddings)
    qkv_in = D if g.zamba is None else g.zamba.attention_hidden
    if n_attn:
        out.append(Group("qkv_proj", "gemm", n_attn, vec(tokens=2 * qkv_in * cols * n_attn),
                         int(qkv_in * cols * ws.attn_w * n_attn),
                         vec(tokens=(qkv_in + cols) * a * n_attn)))
        # Q read, the new K and V written, every layer's KV read (its output write, like
        # vLLM's count, is left to the O projection's input read)
        out.append(Group("attention", "attention", n_attn, vec(
            full_pairs=4 * q * d * n_full, win_pairs=4 * q * d * n_win,
            chunk_pairs=4 * q * d * n_chunk), 0, vec(
            tokens=(q * d * a + kvb) * n_attn, full_ctx=kvb * n_full,
            win_ctx=kvb * n_win, chunk_ctx=kvb * n_chunk)))
        gate = 3 * q * d if lb.output_gate else 0
        out.append(Group("o_proj", "gemm", n_attn, vec(tokens=2 * q * d * D * n_attn),
                         int(q * d * D * ws.attn_w * n_attn),
                         vec(tokens=(q * d + D + gate) * a * n_attn)))
    if lb.mamba and g.mamba is not None:
        n_mamba = lb.mamba
        params = mamba_layer_params(g) // tp
        # (each state at its own dtype: Nemotron-H keeps its SSM state in float32)
        shapes, dtypes = mamba_state(g.mamba, g.dtype, tp, ws.spec_tokens)
        state = 0
        for shape, dtype in zip(shapes, dtypes):
            size = DTYPE_BYTES[dtype]
            for dim in shape:
                size *= dim
            state += size
        # the state read once a request and written once a logit row: a verification of
        # speculative drafts writes the state after each of its tokens, in the K speculative
        # state blocks, so that the accepted one survives (vLLM's per-token state indices)
        out.append(Group("mamba", "mamba", n_mamba, vec(tokens=2 * params * n_mamba),
                         int(params * ws.attn_w * n_mamba),
                         vec(tokens=2 * D * a * n_mamba, requests=state * n_mamba,
                             logit_rows=state * n_mamba)))
    m = lb.ffn_matrices
    if lb.dense_ffn:
        n_dense, di = lb.dense_ffn, g.intermediate_size // tp
        # gate+up, SiLU*mul (reads 2 di, writes di), down: vLLM's activation traffic (squared
        # ReLU, no gate: up, the activation in place of the product, down)
        out.append(Group("mlp", "gemm", n_dense, vec(tokens=2 * m * D * di * n_dense),
                         int(m * D * di * ws.ffn_w * n_dense),
                         vec(tokens=(2 * D + 2 * m * di) * a * n_dense)))
    if lb.moe_ffn:
        n_moe, k, E = lb.moe_ffn, g.num_experts_per_tok or 1, g.num_experts
        mi = (g.moe_intermediate_size or g.intermediate_size) // tp
        sw = g.shared_expert_width // tp if g.shared_expert_width else g.num_shared_experts * mi
        # each routed pass: vLLM's gate+up, SiLU*mul and down traffic; the shared experts run
        # as one MLP ``sw`` wide (vLLM's DeepSeek builds them so: the token read and its
        # output written once, where perf.py bills S outputs and one input); plus the router's
        # GEMM (its weights, the input read, the logits written), which vLLM does not count
        shared_act = 2 * D + 2 * m * sw if sw else 0
        out.append(Group(
            "moe", "gemm", n_moe, vec(tokens=(2 * m * D * (mi * k + sw) + 2 * D * E) * n_moe),
            int(m * D * sw * ws.expert_w * n_moe) + D * E * a * n_moe,
            vec(tokens=((2 * D + 2 * m * mi) * k + shared_act + D + E) * a * n_moe,
                 active_experts=int(m * D * mi * ws.expert_w * n_moe))))
    v = g.vocab_size // tp
    out.append(Group("lm_head", "gemm", 1, vec(logit_rows=2 * D * v), D * v * a,
                     vec(logit_rows=(D + v) * a)))
    return out


def step_work(ws: WorkShape, batch: StepBatch) -> list[Component]:
    """The step's kernel groups, per GPU (summed over layers)."""
    x = aggregate(ws, batch)
    return [Component(gr.name, gr.kind, dot(gr.flops, x), gr.bytes0 + dot(gr.bytes, x),
                      gr.layers) for gr in work_groups(ws)]


def allreduce_bytes(ws: WorkShape, tokens: int) -> tuple[int, int]:
    """(all-reduces per step, bytes each) under tensor parallelism: one after each
    row-parallel output of every layer (`layer_blocks`: the attention output projection or the
    Mamba output, and the MLP / MoE), and the vocabulary-parallel embedding's (each rank looks
    up its share of the vocabulary; vLLM 0.33's `VocabParallelEmbedding.forward` all-reduces
    the T x d rows). The logits' gather to the first rank (num_seqs x vocab) is not counted."""
    if ws.tp <= 1:
        return 0, 0
    return layer_blocks(ws.g).allreduces, tokens * ws.g.hidden_size * ws.act
