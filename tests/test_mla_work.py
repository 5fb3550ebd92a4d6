"""The roofline's work for MLA models (kvcore/clock/mla_work.py) against vLLM 0.33.0's own count
(tests/data/perf_mla, every step): per kernel group it is perf.py's `mla_attn` count except, and
exactly by, what docs/clock.md lists: causal prefill attention, the absorbed attention of
one-token requests, the cached prefix's up-projection, and the MoE router."""

from __future__ import annotations

import json

import pytest
from perf_case_io import MLA, load_spec
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.clock.explain import _VLLM_KEYS, _vllm_part
from kvcore.clock.vllm_count import vllm_counts
from kvcore.clock.work import step_work, work_shape
from kvcore.models import read_hf_config

# the clock does not model expert parallelism (docs/clock.md)
SPECS = [p for p in sorted(MLA.glob("*.steps.jsonl")) if "-ep." not in p.name]


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.name[:-12])
def test_mla_work_is_vllms_count_but_for_the_listed_differences(spec):
    head, shape, batches = load_spec(spec)
    g = read_hf_config(head["model_config"])
    m = g.mla
    assert m is not None
    ws = work_shape(g, tp=head.get("tp", 1), kv_cache_dtype=head.get("kv_cache_dtype", "auto"))
    L, q, a, kvb = g.num_layers, ws.q_heads, ws.act, ws.kv_bytes
    qk, v, c = m.qk_nope_head_dim + m.qk_rope_head_dim, m.v_head_dim, m.kv_lora_rank
    nv, lat = m.qk_nope_head_dim + v, m.latent_size
    assert [gr.name for gr in step_work(ws, batches[0])] == [
        "q_proj", "kv_proj", "attention", "o_proj", "mlp", "moe", "lm_head"]
    for b in batches:
        counts = vllm_counts(shape, b)
        reqs = [(t, ca, p) for t, ca, p in b.requests if t]
        T = sum(t for t, _, _ in reqs)
        # brute force: one-token requests attend in latent space to C keys; longer ones per head,
        # causally (the token at position p to p keys)
        mha_pairs = sum(sum(range(ca - t + 1, ca + 1)) for t, ca, _ in reqs if t > 1)
        mqa_pairs = sum(ca for t, ca, _ in reqs if t == 1)
        prefix = sum(ca - t for t, ca, _ in reqs if t > 1)
        one_token_prefill_ctx = sum(ca for t, ca, p in reqs if t == 1 and p)
        for comp in step_work(ws, b):
            vf, vr, vw = _vllm_part(counts, _VLLM_KEYS[comp.name])
            if comp.name == "attention":
                assert comp.flops == (2 * q * (qk + v) * mha_pairs
                                      + 2 * q * (2 * c + m.qk_rope_head_dim) * mqa_pairs) * L
                # perf.py bills a one-token prefill's context decompressed (q heads' K and V at
                # the activation size); vLLM's MLA decode path reads its latents
                assert vr + vw - comp.bytes == one_token_prefill_ctx * (
                    q * (qk + v) * a - lat * kvb) * L
            elif comp.name == "kv_proj":
                assert comp.flops - vf == 2 * c * q * nv * prefix * L
                assert comp.bytes - (vr + vw) == prefix * (lat * kvb + (lat + c + q * nv) * a) * L
            elif comp.name == "moe":
                E, Lm, D, S = (g.num_experts, g.counted_moe_layers, g.hidden_size,
                               g.num_shared_experts)
                mi = g.moe_intermediate_size // ws.tp
                assert comp.flops - vf == 2 * T * D * E * Lm         # the router
                # the router, and S shared experts as one MLP: the token read and its output
                # written once (perf.py: read once, written S times, down input once)
                shared = (2 * D + 6 * S * mi) - (D * (1 + S) + mi * (1 + 5 * S))
                assert comp.bytes - (vr + vw) == (D * E + T * (D + E + shared)) * a * Lm
            else:
                assert (comp.flops, comp.bytes) == (vf, vr + vw), comp.name


def test_explain_groups_carry_vllms_mla_keys():
    """Every `mla_attn.*` key of vLLM's count lands in exactly one of the clock's groups."""
    _, shape, batches = load_spec(MLA / "deepseek-v3-tp8.steps.jsonl")
    counts = vllm_counts(shape, batches[3])
    keys = [k for k in [*counts.flops, *counts.read_bytes, *counts.write_bytes]
            if k.startswith("mla_attn.")]
    assert len(keys) == 7 + 11 + 6
    for k in keys:
        homes = [n for n, pre in _VLLM_KEYS.items()
                 if any(k == p or (p.endswith(("_", ".")) and k.startswith(p)) for p in pre)]
        assert len(homes) == 1, (k, homes)


def test_roofline_replays_deepseek_v3(tmp_path):
    """The roofline times MLA models (it refused them before: exit 2)."""
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 100, "output_length": 4, '
                     '"hash_ids": [1]}\n')
    r = CliRunner().invoke(app, ["replay", str(trace), "--model", "deepseek-v3", "--tp", "8",
                                 "--gpu", "h200", "--num-blocks", "100", "--block-size", "16",
                                 "--max-model-len", "4096", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert (doc["clock"]["name"], doc["clock"]["model"], doc["clock"]["tp"]) == (
        "roofline", "deepseek-v3", 8)


def test_decode_windows_aggregate_prices_mla_as_listed_decodes():
    """Decodes inside decode windows come as one aggregate (count, context sum): the MLA
    groups must price them as the same decodes listed one by one (latent path)."""
    from kvcore.clock.batch import StepBatch
    from kvcore.clock.linear_form import AGGREGATES
    from kvcore.clock.work import aggregate
    from kvcore.models.presets import load_preset

    ws = work_shape(load_preset("deepseek-v2-lite"))
    listed, agg = StepBatch(), StepBatch(agg_decodes=3, agg_context=100 + 4097 + 20000)
    for c in (100, 4097, 20000):
        listed.add(1, c, False)
    listed.add(512, 9000, True)
    agg.add(512, 9000, True)
    assert aggregate(ws, agg) == aggregate(ws, listed)
    x = dict(zip(AGGREGATES, aggregate(ws, agg)))
    assert (x["latent_ctx"], x["prefix_ctx"]) == (100 + 4097 + 20000, 9000 - 512)
    # one query token attends its whole context; the chunk's pairs are not the decode path's
    assert (x["latent_pairs"], x["logit_rows"]) == (100 + 4097 + 20000, 4)
    assert [(c.flops, c.bytes) for c in step_work(ws, agg)] == [
        (c.flops, c.bytes) for c in step_work(ws, listed)]
