"""kvcore's vLLM-identical work counts against vLLM 0.33.0's own perf.py (the oracle's
recordings in tests/data/perf_cases: every key of every breakdown, exact integers)."""

from __future__ import annotations

import pytest
from perf_case_io import (
    CASES,
    CONFIGS,
    FAMILIES,
    FRESH,
    HYBRID,
    MLA,
    ZAMBA2,
    expected,
    load_spec,
)

# the oracle's recorded sample, then fresh random batches (tests/gen_perf_steps.py; MLA models
# with --mla), then random configs of other families (perf_configs/make_configs.py: class
# defaults, key aliases, derived sliding layers), Falcon-H1 (the one hybrid whose layers
# perf.py reads as they are, its Mamba2 mixers left out: perf_hybrid/), Zamba2 (perf_zamba2/),
# and the families perf.py builds only some components of, or reads other widths of
# (perf_families/: Mamba none, Gemma 3n / 4 no FFN, Gemma 4's widest heads, the pre-Llama
# widths, LFM2's, DBRX's experts)
SPECS = (sorted(CASES.glob("*.steps.jsonl")) + sorted(FRESH.glob("*.steps.jsonl"))
         + sorted(MLA.glob("*.steps.jsonl")) + sorted(CONFIGS.glob("*.steps.jsonl"))
         + sorted(HYBRID.glob("*.steps.jsonl")) + sorted(ZAMBA2.glob("*.steps.jsonl"))
         + sorted(FAMILIES.glob("*.steps.jsonl")))


def _name(p) -> str:
    return p.name[: -len(".steps.jsonl")]


def _id(p) -> str:
    return f"{p.parent.name}/{_name(p)}"


@pytest.mark.parametrize("spec", SPECS, ids=_id)
def test_counts_equal_vllm(spec):
    from kvcore.clock.vllm_count import vllm_counts

    # (a Gemma wrapper's spec names the text-only class the oracle built: the same counts)
    _, shape, batches = load_spec(spec, substitute=spec.parent == FAMILIES)
    header, steps = expected(spec.parent / f"{_name(spec)}.expected.jsonl")
    assert len(steps) == len(batches)
    # the components perf.py built, and none it did not (a Mamba model: none at all)
    built = set(header["components"]) - {"mla_attn"} | ({"attn"} if shape.mla else set())
    assert built == ({"unembed"} if shape.weight_byte_size is None else set(shape.components))
    assert header["is_enabled"] == bool(shape.components)
    # the geometry perf.py parsed (the header's components) is ours
    comps = header["components"]
    if "attn" in comps:
        a = comps["attn"]
        assert (a["num_hidden_layers"], a["num_key_value_heads"], a["head_dim"],
                a["cache_byte_size"], a["weight_byte_size"], a["num_swa_layers"]) == (
            shape.num_hidden_layers, shape.num_key_value_heads, shape.head_dim,
            shape.cache_byte_size, shape.weight_byte_size, shape.num_swa_layers)
    elif "mla_attn" in comps:
        a, m = comps["mla_attn"], shape.mla
        assert m is not None
        assert (a["num_hidden_layers"], a["num_attention_heads"], a["kv_lora_rank"],
                a["qk_nope_head_dim"], a["qk_rope_head_dim"], a["v_head_dim"], a["q_lora_rank"],
                a["cache_byte_size"], a["weight_byte_size"]) == (
            shape.num_hidden_layers, shape.num_attention_heads, m.kv_lora_rank,
            m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim, m.q_lora_rank,
            shape.cache_byte_size, shape.weight_byte_size)
    else:
        # perf.py dropped attn and ffn (quantisation), or built nothing (no attention heads)
        assert shape.weight_byte_size is None or not shape.components
    if "ffn" in comps:
        f = comps["ffn"]
        assert (f["intermediate_size"], f["num_experts"], f["num_experts_per_tok"],
                f["moe_intermediate_size"], f["num_moe_layers"]) == (
            shape.intermediate_size, shape.num_experts, shape.num_experts_per_tok,
            shape.moe_intermediate_size, shape.num_moe_layers)
        assert f["num_shared_experts"] == shape.num_shared_experts
    if "unembed" in comps:
        assert comps["unembed"]["vocab_size"] == shape.vocab_size
    for b, want in zip(batches, steps):
        got = vllm_counts(shape, b)
        assert got.flops == want["num_flops_per_gpu_breakdown"], want["label"]
        assert got.read_bytes == want["num_read_bytes_per_gpu_breakdown"], want["label"]
        assert got.write_bytes == want["num_write_bytes_per_gpu_breakdown"], want["label"]
        assert (got.num_flops, got.num_read_bytes, got.num_write_bytes) == (
            want["num_flops_per_gpu"], want["num_read_bytes_per_gpu"],
            want["num_write_bytes_per_gpu"])
