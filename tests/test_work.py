"""The work the roofline times differs from vLLM's count only where tools/PERF.md says perf.py
leaves work out: per kernel group, on every step of the oracle's recorded and fresh cases of
unquantised models without Mamba or expert parallelism, the clock's FLOPs and bytes equal
vLLM's, except causal prefill attention (checked against a brute-force sum here), the prefill KV
read at the KV cache's byte size, and the MoE router."""

from __future__ import annotations

import pytest
from perf_case_io import CASES, FRESH, expected, load_spec

from kvcore.clock.explain import _VLLM_KEYS, _vllm_part
from kvcore.clock.vllm_count import vllm_counts
from kvcore.clock.work import step_work, work_shape
from kvcore.models import read_hf_config

# weights perf.py drops (AWQ, GPTQ, online fp8, gpt-oss MXFP4), Mamba layers, expert
# parallelism: see docs/clock.md (FP8 checkpoints stay: 1 byte a weight both ways)
SKIP = ("-awq.", "-gptq.", "llama-3.1-8b-fp8.", "gpt-oss", "jamba", "-ep.")
SPECS = [p for p in sorted(CASES.glob("*.steps.jsonl")) + sorted(FRESH.glob("*.steps.jsonl"))
         if not any(s in p.name for s in SKIP)]


def _causal(g, t: int, c_after: int) -> tuple[int, int]:
    """(pairs in full layers, pairs in sliding layers) of one request, by brute force."""
    lo = c_after - t
    full = sum(range(lo + 1, c_after + 1))
    w = g.sliding_window or 0
    win = sum(min(p, w) for p in range(lo + 1, c_after + 1)) if w else 0
    return full, win


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: f"{p.parent.name}/{p.name[:-12]}")
def test_work_is_vllms_count_but_for_perf_md(spec):
    import json

    head, shape, batches = load_spec(spec)
    cfg = head.get("model_config") or json.loads(
        (spec.parent / head["model_config_file"]).read_text())
    g = read_hf_config(cfg)
    ws = work_shape(g, tp=head.get("tp", 1), kv_cache_dtype=head.get("kv_cache_dtype", "auto"))
    same_kv = ws.kv_bytes == ws.act
    q, d = ws.q_heads, g.head_dim
    for b in batches:
        counts = vllm_counts(shape, b)
        work = {c.name: c for c in step_work(ws, b)}
        prefill = any(t > 1 for t, _, _ in b.requests)
        T = sum(t for t, _, _ in b.requests)
        for name, c in work.items():
            vf, vr, vw = _vllm_part(counts, _VLLM_KEYS[name])
            if name == "attention":
                full = win = 0
                for t, ca, _ in b.requests:
                    f, w = _causal(g, t, ca)
                    full, win = full + f, win + w
                assert c.flops == 4 * q * d * (full * g.count("full") + win * g.count("sliding"))
                if not prefill:
                    assert c.flops == vf
                if same_kv or not any(p for _, _, p in b.requests):
                    assert c.bytes == vr + vw
            elif name == "moe":
                E, L = g.num_experts, g.counted_moe_layers
                assert c.flops - vf == 2 * T * g.hidden_size * E * L         # the router
                assert c.bytes - (vr + vw) == (g.hidden_size * E + T * (g.hidden_size + E)) \
                    * ws.act * L
            else:
                assert (c.flops, c.bytes) == (vf, vr + vw), name
    assert expected(spec.parent / f"{spec.name[:-12]}.expected.jsonl")[1]
