"""The `roofline` clock: a step's time from the model's work and the GPU's datasheet peaks.

Per kernel group (`kvcore.clock.work`: QKV, attention, O, MLP or MoE, Mamba, lm_head):

    t = max(launches * floor, FLOPs / (eta_c * peak), bytes / (eta_m * HBM bandwidth))

summed over the groups (a step runs them one after another: a max per group, not one max over
the step), plus the tensor-parallel all-reduces (alpha + 2 (n-1)/n * S / bus bandwidth each),
plus a GPU-side term per step. Under async scheduling (vLLM 0.33's default) the CPU's per-step
and per-request work overlaps the GPU and shows only when it is longer; without it, it adds.
GEMMs use the FP8 peak for FP8 weights on a GPU that has one, else the BF16 peak.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvcore.clock.batch import StepBatch
from kvcore.clock.factors import DEFAULT_FACTORS, FACTORS_SOURCE, Factors
from kvcore.clock.gpus import Gpu
from kvcore.clock.work import (
    Component,
    WorkShape,
    aggregate,
    allreduce_bytes,
    dot,
    work_groups,
    work_shape,
)
from kvcore.errors import InputError
from kvcore.models.geometry import ModelGeometry
from kvcore.models.quantization import auto_kv_dtype
from kvcore.models.weights import estimate_params

if TYPE_CHECKING:
    from kvcore.clock.draft_passes import DraftPasses

WORK_SOURCE = ("vLLM 0.33 perf.py's FLOP and byte counts, with causal attention, windows and "
               "local chunks clamped per token, real weight sizes and Mamba layers as Mamba")


@dataclass(frozen=True, slots=True)
class Timed:
    """One kernel group's time and what bound it."""
    component: Component
    ms: float
    bound: str          # "compute", "memory" or "floor"
    factor: float       # the efficiency of the binding term (1.0 for a floor)


class RooflineClock:
    name = "roofline"
    per_request = True
    # Not kvcli's blind guess (the "uncalibrated" latency label is for that): the model's work on
    # the GPU's datasheet. Its factors are peers' defaults; `describe()` says so.
    uncalibrated = False

    def __init__(self, g: ModelGeometry, gpu: Gpu, *, tp: int = 1, kv_cache_dtype: str = "auto",
                 factors: Factors = DEFAULT_FACTORS, async_scheduling: bool = True,
                 spec_tokens: int = 0, verify_logits: bool | None = None) -> None:
        if g.v4 is not None:    # (compressed, sparse and windowed attention: no work count)
            raise InputError(f"{g.name}: the roofline clock does not time DeepSeek-V4's "
                             "layers", field="model_config" if g.source else "model")
        if g.nas is not None:   # (its work a layer: attention or not, MLPs of their own widths)
            raise InputError(f"{g.name}: the roofline clock does not time Nemotron-NAS's "
                             "layers (no-op attention, MLP widths a layer)", field="model_config")
        if g.layer_windows:     # (a head size and a window a layer)
            raise InputError(f"{g.name}: the roofline clock does not time Domyn Edge's layers "
                             "(a head size and a window a layer)", field="model_config")
        if g.dory is not None:  # (its recurrent blocks run a loop more each)
            raise InputError(f"{g.name}: the roofline clock does not time Dory's recurrent "
                             "loops", field="model_config")
        if g.rswa_window:       # (a decode attends to the prompt and the window alone)
            raise InputError(f"{g.name}: the roofline clock does not time Unlimited-OCR's "
                             "R-SWA attention", field="model_config")
        if g.loop_layers:       # (each layer a pass more, attending to two caches)
            raise InputError(f"{g.name}: the roofline clock does not time IQuest Loop's "
                             "passes", field="model_config")
        if g.num_attention_heads % tp:       # vLLM's own start-up check (ModelConfig)
            raise InputError(f"{g.name}'s {g.num_attention_heads} attention heads do not divide "
                             f"into {tp} tensor-parallel ranks", field="tp")
        self.g, self.gpu, self.tp, self.factors = g, gpu, tp, factors
        # (a ModelOpt checkpoint's "auto": its KV cache algorithm, as vLLM and the pool have it)
        kv_cache_dtype = self.kv_cache_dtype = auto_kv_dtype(g, kv_cache_dtype)
        self.async_scheduling = async_scheduling
        # (`spec_tokens`: the drafts a step verifies, `work.work_shape`)
        self.ws: WorkShape = work_shape(g, tp=tp, kv_cache_dtype=kv_cache_dtype,
                                        spec_tokens=spec_tokens, verify_logits=verify_logits,
                                        gpu=gpu.name)
        self.needs_each = bool(g.count("sliding") or g.count("chunked"))
        fp8 = self.ws.fp8_compute and gpu.fp8_tflops is not None
        self.gemm_peak = (gpu.fp8_tflops if fp8 else gpu.bf16_tflops) * 1e12  # type: ignore[operator]
        self.attn_peak = gpu.bf16_tflops * 1e12
        self.bw = gpu.hbm_tbps * 1e12
        link = gpu.link_gbps * factors.link_fraction if gpu.link_gbps else factors.pcie_gbps
        self.bus = link * 1e9
        check_fits(g, gpu, tp, self.ws)
        self.groups = work_groups(self.ws)
        # per group: its linear form and the (eta_c x peak, eta_m x bandwidth, floor) timing it,
        # in FLOP/ms, bytes/ms and ms
        self.rates = [self._rates(gr.kind, gr.layers) for gr in self.groups]
        # an EAGLE drafter's passes after each forward (`kvcore.clock.draft_passes`, set by
        # `make_clock` when the draft is known); None: nothing drafts on the GPU (n-gram)
        self.draft: DraftPasses | None = None
        self.last_draft_ms = 0.0    # the drafter's part of the last `step_ms`

    # -- the clock -----------------------------------------------------------------------------
    def step_counts(self, prefill_tokens: int, decode_seqs: int) -> float:
        raise TypeError("the roofline clock needs each request's context (step_ms)")

    def step_ms(self, batch: StepBatch) -> float:
        # (the replay's hot path: no objects per group; `timed` gives the same numbers)
        if not batch.requests and not batch.agg_decodes:
            # nothing scheduled: vLLM's model runner returns its empty output without a forward
            # pass (gpu_model_runner.py, EMPTY_MODEL_RUNNER_OUTPUT), so only the CPU's step
            self.last_draft_ms = 0.0
            return self.factors.cpu_step_us / 1000.0
        x = aggregate(self.ws, batch)
        gpu_ms = self.forward_ms(x)
        if self.draft is not None:
            # (kept apart for pipeline parallelism: the drafter runs on the last stage only)
            self.last_draft_ms = self.draft.gpu_ms(batch)
            gpu_ms += self.last_draft_ms
        return self.total_ms(gpu_ms, x[1])

    def forward_ms(self, x: tuple[int, ...]) -> float:
        """One forward pass's GPU time over a batch's aggregates (`work.aggregate`), its
        tensor-parallel all-reduces included."""
        gpu_ms = 0.0
        for gr, (compute_rate, memory_rate, floor) in zip(self.groups, self.rates):
            t = dot(gr.flops, x) / compute_rate
            m = (gr.bytes0 + dot(gr.bytes, x)) / memory_rate
            # (if-statements, not max(): this runs per group per step; see plain_step.py)
            if m > t:  # noqa: PLR1730
                t = m
            gpu_ms += t if t > floor else floor  # noqa: FURB136
        return gpu_ms + self.allreduce_ms(x[0])

    def gemm_ms(self, params: int, tokens: int) -> float:
        """A GEMM of `params` weights over `tokens` tokens, timed as the model's GEMMs."""
        eta_c, peak, eta_m, floor_us = self._etas("gemm")
        t = 2 * params * tokens / (eta_c * peak) * 1000.0
        m = params * self.ws.ffn_w / (eta_m * self.bw) * 1000.0
        return max(t, m, floor_us / 1000.0)

    def decode_ms(self, n: int, context_sum: int) -> float:
        if n == 1 and self.needs_each:
            # (windowed layers clamp each context, so no aggregate: one decode is its own
            # request, its context at least its one token)
            return self.step_ms(StepBatch(requests=[(1, max(context_sum, 1), False)]))
        return self.step_ms(StepBatch(agg_decodes=n, agg_context=context_sum))

    def total_ms(self, gpu_ms: float, requests: int) -> float:
        f = self.factors
        gpu = gpu_ms + f.step_gpu_us / 1000.0
        cpu = (f.cpu_step_us + f.cpu_request_us * requests) / 1000.0
        return max(gpu, cpu) if self.async_scheduling else gpu + cpu

    # -- the breakdown -------------------------------------------------------------------------
    def _etas(self, kind: str) -> tuple[float, float, float, float]:
        """(eta_c, peak FLOP/s, eta_m, floor us per launch) of a kind of kernel group."""
        f = self.factors
        if kind == "attention":
            return f.attention_compute, self.attn_peak, f.kv_memory, f.attention_floor_us
        return f.gemm_compute, self.gemm_peak, f.gemm_memory, f.gemm_floor_us

    def _rates(self, kind: str, layers: int) -> tuple[float, float, float]:
        eta_c, peak, eta_m, floor_us = self._etas(kind)
        return eta_c * peak / 1000.0, eta_m * self.bw / 1000.0, layers * floor_us / 1000.0

    def timed(self, batch: StepBatch) -> list[Timed]:
        """The step's kernel groups with their times and bounds (what `step_ms` sums)."""
        x = aggregate(self.ws, batch)
        out = []
        for gr, (compute_rate, memory_rate, floor) in zip(self.groups, self.rates):
            c = Component(gr.name, gr.kind, dot(gr.flops, x), gr.bytes0 + dot(gr.bytes, x),
                          gr.layers)
            eta_c, _, eta_m, _ = self._etas(gr.kind)
            compute, memory = c.flops / compute_rate, c.bytes / memory_rate
            if memory > compute:
                out.append(Timed(c, memory, "memory", eta_m) if memory > floor
                           else Timed(c, floor, "floor", 1.0))
            else:
                out.append(Timed(c, compute, "compute", eta_c) if compute > floor
                           else Timed(c, floor, "floor", 1.0))
        return out

    def allreduce_ms(self, tokens: int) -> float:
        """The step's tensor-parallel all-reduces (0 at tp 1), for ``tokens`` new tokens."""
        calls, size = allreduce_bytes(self.ws, tokens)
        if not calls:
            return 0.0
        n = self.tp
        each = self.factors.allreduce_us / 1000.0 + 2 * (n - 1) / n * size / self.bus * 1000.0
        return calls * each

    def describe(self) -> dict:
        return {"name": "roofline", "model": self.g.name, "gpu": self.gpu.to_dict(),
                "tp": self.tp, "kv_cache_dtype": self.kv_cache_dtype,
                "async_scheduling": self.async_scheduling,
                "factors": self.factors.to_dict(), "factors_source": FACTORS_SOURCE,
                "work": WORK_SOURCE}

    def uncalibrated_warning(self) -> str | None:
        return None


def weight_bytes_per_gpu(g: ModelGeometry, tp: int, ws: WorkShape) -> int:
    """The model's weights on one GPU at their stored sizes (embeddings and lm_head unquantised)."""
    dense, mx = estimate_params(g)
    embed = g.vocab_size * g.hidden_size * (1 if g.tie_word_embeddings else 2)
    body = dense - embed
    total = embed * ws.act + body * ws.ffn_w + mx * ws.expert_w
    return int(total) // tp


def check_fits(g: ModelGeometry, gpu: Gpu, tp: int, ws: WorkShape) -> None:
    need = weight_bytes_per_gpu(g, tp, ws)
    have = gpu.mem_gb * 1e9
    if need > have:
        raise InputError(f"{g.name}'s weights need {need / 1e9:,.1f} GB per GPU at tp {tp}, "
                         f"more than the {gpu.name}'s {gpu.mem_gb:g} GB (a larger --tp or GPU "
                         "would hold them)", field="gpu")
