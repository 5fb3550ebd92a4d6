"""The roofline clock: the reference's worked numbers (docs/clock.md, "The reference's worked
example": Llama-3.1-8B bf16 on one H100 SXM, default factors), monotone in tokens and context,
and a model too big for the GPU refused."""

from __future__ import annotations

import dataclasses
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from perf_case_io import CASES, expected

from kvcore.clock.batch import StepBatch
from kvcore.clock.factors import Factors
from kvcore.clock.gpus import find_gpu
from kvcore.clock.roofline import RooflineClock
from kvcore.errors import InputError
from kvcore.models import load_preset

H100 = find_gpu("h100-sxm")
LLAMA = load_preset("llama-3.1-8b")
IDEAL = Factors(gemm_compute=1, gemm_memory=1, attention_compute=1, kv_memory=1,
                gemm_floor_us=0, attention_floor_us=0, step_gpu_us=0, cpu_step_us=0,
                cpu_request_us=0)
DECODE = StepBatch([(1, 4097, False)] * 64)         # 64 sequences, 4,096 tokens in the cache
PREFILL = StepBatch([(2048, 2048, True)])


def gpu_ms(clock: RooflineClock, batch: StepBatch) -> float:
    return sum(t.ms for t in clock.timed(batch))


def test_prefill_worked_example():
    """clock.md 4.3: 30.32 ms ideal, 41.14 ms of GPU time with the default factors (GEMMs at
    0.75 of 989.4 TF, causal attention 1.10 TF at 0.5, lm_head streaming at 0.8 of 3.35 TB/s)."""
    c = RooflineClock(LLAMA, H100)
    assert gpu_ms(c, PREFILL) == pytest.approx(41.14, abs=0.005)
    assert gpu_ms(RooflineClock(LLAMA, H100, factors=IDEAL), PREFILL) == pytest.approx(
        30.32, abs=0.01)
    # causal attention: 4 * 32 heads * 128 * (2048 * 2049 / 2) pairs * 32 layers
    att = next(t for t in c.timed(PREFILL) if t.component.name == "attention")
    assert att.component.flops == 4 * 32 * 128 * (2048 * 2049 // 2) * 32
    assert att.bound == "compute" and att.ms == pytest.approx(
        att.component.flops / (0.5 * 989.4e12) * 1e3)
    # the step adds the GPU-side 0.15 ms; the CPU's 0.155 ms hides under async scheduling
    assert c.step_ms(PREFILL) == pytest.approx(gpu_ms(c, PREFILL) + 0.15)


def test_decode_worked_example():
    """clock.md 4.2: 17.12 ms (14.83 ideal). The clock bills vLLM's activation traffic (0.46 GB,
    where the reference estimates 0.32) and the new token's own KV: 17.19 ms, 0.4 % above. The
    exact value from vLLM's own recorded byte counts of this step (every group memory bound):
    linear layers and lm_head at 0.80, attention's KV at 0.90 of 3.35 TB/s."""
    _, steps = expected(CASES / "clock-worked-example.expected.jsonl")
    step = next(s for s in steps if s["label"].startswith("decode"))
    r, w = step["num_read_bytes_per_gpu_breakdown"], step["num_write_bytes_per_gpu_breakdown"]
    attn = r["attn.attn_input"] + w["attn.kv_cache"]
    rest = sum(r.values()) + sum(w.values()) - r["attn.attn_input"] - w["attn.kv_cache"]
    want = (rest / (0.80 * 3.35e12) + attn / (0.90 * 3.35e12)) * 1e3
    c = RooflineClock(LLAMA, H100)
    assert gpu_ms(c, DECODE) == pytest.approx(want, rel=1e-12)
    assert gpu_ms(c, DECODE) == pytest.approx(17.12, rel=0.005)
    assert gpu_ms(RooflineClock(LLAMA, H100, factors=IDEAL), DECODE) == pytest.approx(
        14.83, rel=0.005)
    assert c.step_ms(DECODE) == pytest.approx(want + 0.15)     # clock.md: "~17.3 ms async"
    assert all(t.bound == "memory" for t in c.timed(DECODE))


def test_window_and_chunk_sums_by_hand():
    from kvcore.clock.work import _chunk_sum, _window_sum
    for lo, hi, w in ((4, 5, 1024), (0, 2048, 1024), (1000, 1030, 1024), (5000, 5003, 128)):
        assert _window_sum(lo, hi, w) == sum(min(p, w) for p in range(lo + 1, hi + 1))
        assert _chunk_sum(lo, hi, w) == sum((p - 1) % w + 1 for p in range(lo + 1, hi + 1))


@pytest.mark.parametrize("k", range(6))
def test_step_ms_is_the_breakdown_summed(k):
    """The replay's path (no objects per group) and `timed` (explain's) agree to the bit."""
    clock = CLOCKS[k]
    for batch in (DECODE, PREFILL, StepBatch([(700, 9000, True), (1, 130, False)] * 3)):
        gpu = sum(t.ms for t in clock.timed(batch)) + clock.allreduce_ms(batch.num_tokens)
        assert clock.step_ms(batch) == clock.total_ms(gpu, batch.num_requests)


def test_decode_aggregate_equals_listed_requests():
    c = RooflineClock(LLAMA, H100)
    listed = StepBatch([(1, 100 + i, False) for i in range(50)])
    assert c.decode_ms(50, sum(100 + i for i in range(50))) == c.step_ms(listed)


def test_sync_scheduling_adds_the_cpu():
    sync = RooflineClock(LLAMA, H100, async_scheduling=False)
    assert sync.step_ms(DECODE) == pytest.approx(gpu_ms(sync, DECODE) + 0.15 + 0.15 + 64 * 0.005)


def test_a100_is_slower_and_tp_splits_the_work():
    a100 = RooflineClock(LLAMA, find_gpu("a100-80gb"))
    assert a100.step_ms(DECODE) > RooflineClock(LLAMA, H100).step_ms(DECODE) * 1.5
    tp2 = RooflineClock(LLAMA, H100, tp=2)
    one, two = RooflineClock(LLAMA, H100), tp2
    assert gpu_ms(two, DECODE) < 0.55 * gpu_ms(one, DECODE)
    # 2 x 32 layers + the vocabulary-parallel embedding's = 65 all-reduces of 64 x 4096 x 2
    # bytes: 25 us + 2 (1/2) 512 KiB / (0.35 x 900 GB/s) each
    assert two.allreduce_ms(64) == pytest.approx(65 * (0.025 + 524288 / 315e9 * 1e3))


def test_fp8_kv_cache_halves_the_kv_read():
    fp8 = RooflineClock(LLAMA, H100, kv_cache_dtype="fp8")
    a = next(t for t in fp8.timed(DECODE) if t.component.name == "attention")
    b = next(t for t in RooflineClock(LLAMA, H100).timed(DECODE)
             if t.component.name == "attention")
    assert b.component.bytes - a.component.bytes == 64 * 4097 * 2 * 8 * 128 * 32 + \
        64 * 2 * 8 * 128 * 32


def test_heads_must_divide_by_tp():
    with pytest.raises(InputError) as err:
        RooflineClock(LLAMA, H100, tp=3)
    assert err.value.field == "tp" and "32 attention heads" in err.value.message


def test_too_big_for_the_gpu_is_refused():
    with pytest.raises(InputError) as err:
        RooflineClock(load_preset("llama-3.1-70b"), find_gpu("l4"))
    assert err.value.field == "gpu" and "24 GB" in err.value.message
    RooflineClock(load_preset("llama-3.1-70b"), find_gpu("h100-sxm"), tp=2)   # 70.6 GB a GPU


MODELS = [("llama-3.1-8b", "h100-sxm", 1), ("gemma-3-27b", "a100-80gb", 2),
          ("gpt-oss-20b", "h200", 1), ("mixtral-8x7b", "h100-sxm", 4),
          ("jamba-v0.1", "h200", 2), ("qwen3-8b", "l40s", 1)]
CLOCKS = [RooflineClock(load_preset(m), find_gpu(g), tp=tp) for m, g, tp in MODELS]
REQ = st.tuples(st.integers(1, 3000), st.integers(0, 60000))


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(range(len(CLOCKS))), st.lists(REQ, min_size=1, max_size=12),
       st.integers(0, 11), st.integers(1, 500), st.booleans())
def test_more_tokens_or_context_never_take_less_time(k, reqs, which, more, tokens):
    clock = CLOCKS[k]
    batch = StepBatch([(t, c + t, t > 1) for t, c in reqs])
    i = which % len(reqs)
    t, c = reqs[i]
    grown = list(reqs)
    grown[i] = (t + more, c) if tokens else (t, c + more)
    bigger = StepBatch([(tj, cj + tj, tj > 1) for tj, cj in grown])
    assert clock.step_ms(bigger) >= clock.step_ms(batch)
    # and one more request never takes less time either
    assert clock.step_ms(dataclasses.replace(bigger, requests=bigger.requests + [(1, 5, False)])) \
        >= clock.step_ms(bigger)


def test_a_batch_with_nothing_scheduled_costs_the_cpus_step_only():
    """vLLM's model runner returns its empty output without a forward pass when nothing is
    scheduled: no weight read (8B in bf16: ~6 ms on an H100), only the CPU's step."""
    for asyn in (True, False):
        clock = RooflineClock(LLAMA, H100, async_scheduling=asyn)
        assert clock.step_ms(StepBatch()) == clock.factors.cpu_step_us / 1000.0 == 0.15
        assert clock.step_ms(StepBatch([(1, 2, False)])) > 6.0


def test_an_idle_servers_first_token_comes_when_the_prefill_ends(tmp_path):
    """One request on an idle engine, async (the default): its prefill batch runs [0, g0] and
    its first token is stamped g0 (it was g0 + the decode batch after it, one batch late); each
    later token ends its own decode batch; the empty batch after the last adds nothing."""
    import json

    from kvcore.engine.replay import ReplayOptions, replay

    trace = tmp_path / "one.jsonl"
    trace.write_text(json.dumps({"timestamp": 0, "input_length": 100, "output_length": 3}))
    clock = RooflineClock(LLAMA, H100)
    g0 = clock.step_ms(StepBatch([(100, 100, True)]))
    g1, g2 = (clock.step_ms(StepBatch([(1, c, False)])) for c in (101, 102))
    reqs = io.BytesIO()
    replay(str(trace), ReplayOptions(model="llama-3.1-8b", gpu="h100-sxm"), requests_out=reqs)
    line = json.loads(reqs.getvalue())
    assert line["ttft_ms"] == round(g0, 6) and abs(line["e2e_ms"] - (g0 + g1 + g2)) < 1e-5
