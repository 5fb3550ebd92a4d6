"""K2-Horizon (`k2_horizon`) against vLLM 0.33.0's own class on the meta device as an H100
builds it (tests/data/weights_census/k2_horizon/answers.json, every rank at TP 1, 2 and 4):
its router, a GateLinear given the quant_config, quantised under fp8, AWQ, GPTQ,
compressed-tensors and ModelOpt unless a list names it, and its bias in float32. Each rank
kvcli sizes equals vLLM's bytes, buffers too (its RoPE cache rope_head_dim wide); the
features kvcli does not model are refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.buffers import estimate_buffer_bytes
from kvcore.models.hf_config import read_hf_config
from kvcore.models.int_quant_rank import unquantised_method
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import assert_rank_equal, built_ranks, refused_tps, vllms_words

HERE = Path(__file__).parent / "data" / "weights_census" / "k2_horizon"
CASES = {n.split("/")[-1].removesuffix(".config.json"): c
         for n, c in json.loads((HERE / "answers.json").read_text())["cases"].items()}
# (the features kvcli refuses, by the words its refusal names them)
UNMODELLED = {"k2-horizon-attn-bias": "attention biases", "k2-horizon-gated-attn":
              "gated attention", "k2-horizon-qk-norm": "q/k norms",
              "k2-horizon-mova": "MoVA attention"}


def _geometry(name: str):
    return read_hf_config(json.loads((HERE / f"{name}.config.json").read_text()), name=name)


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES, skip=UNMODELLED))
def test_each_rank_is_vllms_bytes(name: str, tp: int, rank: int) -> None:
    g = _geometry(name)
    assert_rank_equal(g, tp, CASES[name]["tp"][str(tp)][rank])
    assert unquantised_method(g) is None


def test_its_rope_cache_is_rope_head_dim_wide() -> None:
    # (262,144 positions x 64 rotated of 128: kvcli billed 128 wide, 67,108,928 B)
    assert estimate_buffer_bytes(_geometry("k2-horizon"), 1) == 262_144 * 64 * 2 + 4 * 16


@pytest.mark.parametrize("name", sorted(UNMODELLED))
def test_what_kvcli_does_not_model_is_refused_by_name(name: str) -> None:
    with pytest.raises(InputError) as e:
        estimate_weights_bytes(_geometry(name), 1)
    assert e.value.field == "weights_gib"
    assert f"kvcli does not estimate K2-Horizon's {UNMODELLED[name]}" in e.value.message


VLLM_REFUSED = [p for p in refused_tps(CASES) if p.values[0] not in UNMODELLED]


@pytest.mark.parametrize(("name", "tp"), VLLM_REFUSED)
def test_what_vllm_refuses_is_refused_in_its_words(name: str, tp: int) -> None:
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=_geometry(name), tensor_parallel_size=tp,
                                gpu_memory_gib=4096, max_model_len=1024)
    assert e.value.field == "tensor_parallel_size"
    assert vllms_words(CASES[name]["tp"][str(tp)][0]["refused"]) in e.value.message


def test_the_census_holds_what_was_drawn() -> None:
    assert (len(CASES), len(built_ranks(CASES)), len(VLLM_REFUSED)) == (21, 116, 6)
    assert len(built_ranks(CASES, skip=UNMODELLED)) == 95


def test_the_router_is_quantised_with_a_float32_bias() -> None:
    fp8 = CASES["k2-horizon-fp8-block"]["tp"]["1"][0]
    names = fp8["param_numel_by_name"]
    # (4 layers of a 128 x 2048 router: fp8 with a 1 x 16 grid of scales; 128 float32 biases)
    assert names["model.layers.*.mlp.gate.weight_scale_inv"] == 4 * 16
    assert names["model.layers.*.mlp.gate.bias"] == 4 * 128
    assert estimate_weights_bytes(_geometry("k2-horizon-fp8-block"), 1) == 3_756_651_296
    # bf16: the biases' 2,048 B in float32 (kvcli counted none: 6,267,375,616)
    assert estimate_weights_bytes(_geometry("k2-horizon"), 1) == 6_267_377_664
    awq = CASES["k2-horizon-awq"]["tp"]["1"][0]["param_numel_by_name"]
    assert awq["model.layers.*.mlp.gate.qweight"] == 4 * 2048 * 128 // 8
