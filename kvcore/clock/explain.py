"""`kvcli clock explain`: one step's time per kernel group, beside vLLM's own count.

Cases use `vllm bench forward`'s syntax (vLLM 0.33 `benchmarks/forward/shapes.py`), so the two
talk about the same batches: ``NAME=REQS``, REQS a comma list of ``[N*]Q[@K][c][:D]`` where Q
is the request's new tokens, K its KV length *after* the step (the prefix plus Q; default Q, a
fresh prefill), N how many such requests, ``c`` a chunked prefill and D draft tokens. So
``decode=64*1@4097`` is 64 decodes with 4,096 tokens already computed, ``prefill=2048`` one
2,048-token prefill from nothing. A request is billed as vLLM's perf.py bills it: a decode when
Q is 1 and it has a prefix, else a prefill.
"""

from __future__ import annotations

import re
from typing import Any, cast

from kvcore.clock.batch import StepBatch
from kvcore.clock.gpus import find_gpu
from kvcore.clock.perf_components import dropped_note
from kvcore.clock.registry import calibrated_clock, model_geometry
from kvcore.clock.roofline import RooflineClock
from kvcore.clock.vllm_count import (
    Counts,
    VllmShape,
    class_experts,
    vllm_counts,
    vllm_shape,
)
from kvcore.errors import InputError, nonempty_name
from kvcore.models.geometry import ModelGeometry
from kvcore.sizing.option_ranges import check_positive_int
from kvcore.traces.formats import MAX_REQUEST_TOKENS

# A step's requests are listed one by one: a count in the billions would not return.
MAX_CASE_REQUESTS = 1_000_000
_REQ = re.compile(r"^(?:(\d+)\*)?(\d+)(?:@(\d+))?(c)?(?::(\d+))?$")
# vLLM's operations summed into each of the clock's kernel groups (MLA: `mla_attn.*`)
_VLLM_KEYS = {
    "qkv_proj": ("attn.qkv_proj", "attn.qkv_input", "attn.qkv_weight", "attn.qkv_output"),
    "q_proj": ("mla_attn.q_",),
    "kv_proj": ("mla_attn.kv_a_", "mla_attn.kv_b_"),
    "attention": ("attn.attn_qk", "attn.attn_av", "attn.attn_input", "attn.kv_cache",
                  "mla_attn.attn_qk", "mla_attn.attn_av", "mla_attn.attn_input",
                  "mla_attn.kv_cache"),
    "o_proj": ("attn.out_proj", "attn.out_input", "attn.out_weight", "attn.out_output",
               "mla_attn.out_"),
    "mlp": ("ffn.dense_",),
    "moe": ("ffn.routed_", "ffn.shared_"),
    "lm_head": ("unembed.",),
}


def parse_case(text: str) -> tuple[str, StepBatch]:
    name, sep, body = text.partition("=")
    if not sep:
        name, body = text, text
    elif not name.strip():
        # (`=5` was shown as a case with no name)
        raise InputError(f"case {text!r}: no NAME before '=' (give NAME=... or the requests "
                         "alone)", field="case")
    batch = StepBatch()
    for item in body.split(","):
        m = _REQ.match(item.strip())
        if m is None:
            raise InputError(f"invalid request {item.strip()!r} in case {text!r} (expected "
                             "[N*]Q[@K][c][:D], e.g. decode=64*1@4097)", field="case")
        count, q, k, chunk, drafts = m.groups()
        query, kv = int(q), int(k or q)
        if query < 1 or kv < query or int(count or 1) < 1:
            raise InputError(f"case {text!r}: need N >= 1, Q >= 1 and K >= Q (K is the KV "
                             "length after the step, the query included)", field="case")
        # `vllm bench forward`'s own rules (benchmarks/forward/shapes.py, BenchRequest): a
        # decode or verify has a prefix and Q = 1 + D; a chunk is a prefill with a prefix
        decode = kv > query and query == 1 + int(drafts or 0)
        if drafts is not None and int(drafts) and not decode:
            raise InputError(f"case {text!r}: a verify step has Q = 1 + D and a prefix (K > Q)",
                             field="case")
        if chunk and (decode or kv == query):
            raise InputError(f"case {text!r}: a chunk ('c') is a prefill with a prefix "
                             "(Q > 1 + D and K > Q)", field="case")
        if kv > MAX_REQUEST_TOKENS:
            raise InputError(f"case {text!r}: K {kv:,} is more than the limit of "
                             f"{MAX_REQUEST_TOKENS:,} tokens a request", field="case")
        if batch.num_requests + int(count or 1) > MAX_CASE_REQUESTS:
            raise InputError(f"case {text!r}: more than {MAX_CASE_REQUESTS:,} requests in one "
                             "step", field="case")
        batch.add(query, kv, not (query == 1 and kv > 1), int(count or 1))
    return name, batch


def _vllm_part(counts: Counts, prefixes: tuple[str, ...]) -> tuple[int, int, int]:
    def pick(d: dict[str, int]) -> int:
        return sum(v for key, v in d.items() if any(
            key == p or (p.endswith(("_", ".")) and key.startswith(p)) for p in prefixes))
    return pick(counts.flops), pick(counts.read_bytes), pick(counts.write_bytes)


def explain(*, model: str | None, model_config: str | None, gpu: str | None, cases: list[str],
            tp: int = 1, kv_cache_dtype: str = "auto", async_scheduling: bool = True,
            calibration: str | None = None) -> dict:
    """Per case: the clock's step time and work per kernel group, vLLM's per-GPU counts beside
    them, and where the two differ. With ``calibration`` the calibrated clock (the file's
    ceilings and fitted factors), else the roofline on the ``gpu`` preset."""
    # (--calibration '' timed the roofline clock, unsaid; --gpu '' beside a file was dropped)
    nonempty_name(gpu, "gpu")
    nonempty_name(calibration, "calibration")
    g = model_geometry(model, model_config)
    if g is None:
        raise InputError("a model is needed (--model or --model-config)", field="model")
    if not cases:
        raise InputError("give at least one --case (e.g. 'decode=64*1@4097')", field="case")
    check_positive_int(tp, "tp")
    clock: RooflineClock
    if calibration:
        clock = cast(RooflineClock, calibrated_clock(
            calibration, model=model, model_config=model_config, gpu=gpu, tp=tp,
            kv_cache_dtype=kv_cache_dtype, async_scheduling=async_scheduling))
        source = "fitted"      # (Mamba groups take the GEMM factors, fitted too)
    elif gpu:
        clock = RooflineClock(g, find_gpu(gpu), tp=tp, kv_cache_dtype=kv_cache_dtype,
                              async_scheduling=async_scheduling)
        source = "default"
    else:
        raise InputError("a GPU preset (--gpu) or a calibration file (--calibration) is needed",
                         field="gpu")
    shape = vllm_shape(g, tp=tp, kv_cache_dtype=kv_cache_dtype)
    out = []
    for text in cases:
        name, batch = parse_case(text)
        counts = vllm_counts(shape, batch)
        comps: list[dict[str, Any]] = []
        timed = clock.timed(batch)
        for t in timed:
            c = t.component
            vf, vr, vw = _vllm_part(counts, _VLLM_KEYS.get(c.name, ()))
            comps.append({"name": c.name, "kind": c.kind, "flops": c.flops, "bytes": c.bytes,
                          "bound": t.bound, "ms": round(t.ms, 6), "factor": t.factor,
                          "source": source, "vllm_flops": vf, "vllm_bytes": vr + vw})
        ar = clock.allreduce_ms(batch.num_tokens)
        if ar:
            comps.append({"name": "allreduce", "kind": "comm", "flops": 0, "bytes": 0,
                          "bound": "link", "ms": round(ar, 6), "factor":
                          clock.factors.link_fraction, "source": "default", "vllm_flops": 0,
                          "vllm_bytes": 0})
        gpu_ms = sum(t.ms for t in timed) + ar
        out.append({
            "case": name, "spec": text, "requests": batch.num_requests,
            "tokens": batch.num_tokens, "step_ms": round(clock.step_ms(batch), 6),
            "gpu_ms": round(gpu_ms, 6),
            "flops": sum(x["flops"] for x in comps), "bytes": sum(x["bytes"] for x in comps),
            "vllm_flops": counts.num_flops, "vllm_read_bytes": counts.num_read_bytes,
            "vllm_write_bytes": counts.num_write_bytes, "components": comps,
            "differences": differences(g, shape, batch), "clock": clock.describe()})
    return {"model": g.name, "gpu": clock.gpu.name, "tp": tp, "clock": clock.name,
            "calibration": calibration, "cpu_step_us": clock.factors.cpu_step_us,
            "cpu_request_us": clock.factors.cpu_request_us,
            "warning": clock.uncalibrated_warning(), "cases": out}


def differences(g: ModelGeometry, shape: VllmShape, batch: StepBatch) -> list[str]:
    """Where the clock's work departs from vLLM's count for this model and batch (PERF.md)."""
    if not shape.components:        # (Mamba: perf.py counts nothing, the rest is moot)
        return [dropped_note(g)]
    notes = [dropped_note(g)] if dropped_note(g) else []
    if shape.weight_byte_size is None:
        notes.append(f"vLLM drops attention and FFN (quantisation {shape.quant_name!r} is not in "
                     "perf.py's table): it counts the lm_head only; the clock times them all")
    if any(t > 1 for t, _, _ in batch.requests):
        notes.append("prefill attention: the clock counts causal work (a token at position p "
                     "attends to p keys); vLLM bills every new token against the whole context")
        if g.mla is None and shape.cache_byte_size != shape.activation_byte_size:
            # (the same size, e.g. --kv-cache-dtype auto: the two counts agree)
            notes.append("prefill KV read: the clock reads the context at the KV cache dtype; "
                         "vLLM bills it at the activation dtype")
        elif any(t > 1 and c > t for t, c, _ in batch.requests):
            notes.append("MLA prefill after a cached prefix: the clock reads the prefix's "
                         "latents and up-projects them (kv_b), which vLLM does not bill")
    if g.mla is not None and (batch.agg_decodes or any(t == 1 for t, _, _ in batch.requests)):
        m = g.mla
        notes.append(f"MLA one-token requests: the clock counts the absorbed attention (QK over "
                     f"the {m.latent_size}-wide latent, AV over {m.kv_lora_rank}) and reads "
                     "latents; vLLM counts the heads' "
                     f"{m.qk_nope_head_dim + m.qk_rope_head_dim} and {m.v_head_dim} dims (and "
                     "bills a one-token prefill's KV decompressed)")
    if g.count("mamba"):
        what = ("Gated DeltaNet" if g.mamba is not None and g.mamba.version == "gdn"
                else "Mamba")
        notes.append(f"{what} layers: the clock times their projections and state; vLLM bills "
                     "them as attention layers")
    if class_experts(g):
        notes.append("Nemotron-H: the clock counts each layer's one block (Mamba2, attention or "
                     "MLP); vLLM bills every layer as attention plus a mixture-of-experts block "
                     "of NemotronHConfig's defaults (8 experts of 7,688, 2 a token, 1 shared)")
    if g.count("parallel"):
        notes.append("Mamba2 mixers beside each layer's attention: the clock times their "
                     "projections and state; vLLM does not count them")
    moe_layers = sum(1 for m in g.moe_layers if m) if g.num_experts else 0
    if g.num_experts and moe_layers != shape.num_moe_layers:
        notes.append(f"MoE layers: the clock uses the model's {moe_layers}; vLLM bills "
                     f"{shape.num_moe_layers}")
    if g.num_experts and g.model_type == "llama4_text":
        notes.append(f"Llama 4: the clock runs each MoE layer's shared expert "
                     f"({g.moe_intermediate_size:,} wide) and its dense layers at "
                     f"intermediate_size_mlp ({g.intermediate_size:,}); vLLM bills no shared "
                     f"expert and dense layers at intermediate_size ({shape.intermediate_size:,})")
    if g.quantization and shape.weight_byte_size is not None:
        notes.append("weights at their real stored size (scales included) in the clock")
    if g.num_experts:
        notes.append("the clock adds the MoE router's GEMM, which vLLM does not count")
    return notes
