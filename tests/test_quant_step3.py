"""Step3 (Step3-VL, the published stepfun-ai/step3-fp8's class, and its text model) quantised,
against vLLM 0.33.0's classes built on the meta device at TP 1, 2, 4 and 8
(tests/data/weights_census/quant_step3/answers.json, recorded by record_quant_step3.py there):
every built rank's bytes and buffers, and every refusal. Before, kvcli refused every quantised
Step3 checkpoint by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import (
    assert_rank_equal,
    built_ranks,
    case_geometry,
    check_ranks_agree,
    refused_tps,
    vllms_words,
)

DATA = Path(__file__).parent / "data" / "weights_census" / "quant_step3"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]


def test_every_case_recorded_and_its_ranks_agree() -> None:
    assert len(CASES) == 19
    check_ranks_agree(CASES)


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES))
def test_bytes_and_buffers_per_rank_equal_vllms(name: str, tp: int, rank: int) -> None:
    """Every linear (the replicated qkv_proj, o_proj, wq, the MLPs and the shared expert) and
    the experts quantised; the router, the LM head, the attention (no q/k/v scales) and
    Step3-VL's tower and projector (built with no quant_config) in bfloat16."""
    assert_rank_equal(case_geometry(DATA, CASES, name), tp, CASES[name]["tp"][str(tp)][rank])


@pytest.mark.parametrize(("name", "tp"), refused_tps(CASES))
def test_what_vllm_cannot_build_kvcli_refuses_in_its_words(name: str, tp: int) -> None:
    """The shared expert's 256-wide down_proj over 4 ranks (fp8 blocks, AWQ groups), W4A16's
    experts 64 wide a rank (built before the shared expert), o_proj's 512-wide input over 8;
    Step3-VL's 4 tower heads over 8 (vLLM's AssertionError)."""
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=case_geometry(DATA, CASES, name),
                                tensor_parallel_size=tp, gpu_memory_gib=80, max_model_len=4096)
    assert e.value.field == "tensor_parallel_size"
    said = vllms_words(CASES[name]["tp"][str(tp)][0]["refused"]).rstrip(": ")
    if said == "AssertionError":
        said = "vision tower has 4 attention heads"
    assert said in e.value.message


def test_the_published_step3_fp8_at_tp_8() -> None:
    """stepfun-ai/step3-fp8: 1-byte linears and experts with their block scales, the tower in
    bfloat16; vLLM's bytes a rank (below), and before: refused by name."""
    rec = CASES["step3-fp8"]["tp"]["8"][0]
    g = read_hf_config(json.loads((DATA / "step3-fp8.config.json").read_text()), name="x")
    assert estimate_weights_bytes(g, 8) == sum(rec["param_bytes_by_dtype"].values()) \
        == 42_658_005_632


@pytest.mark.parametrize("quant", [{"quant_method": "quark"}, {"quant_method": "mxfp4"}, {
    "quant_method": "fp8", "activation_scheme": "dynamic", "ignored_layers": ["lm_head"]}])
def test_what_kvcli_does_not_size_is_refused_by_name(quant: dict) -> None:
    """Methods whose linears kvcli does not pack on Step3's layers, and an fp8 ignore list
    (the MoE ledger does not apply it): refused, the measured size asked for."""
    cfg = json.loads((DATA / "tiny-step3-text-fp8.config.json").read_text())
    g = read_hf_config({**cfg, "quantization_config": quant}, name="x")
    with pytest.raises(InputError) as e:
        estimate_weights_bytes(g, 1)
    assert e.value.message == (
        "x: kvcli does not estimate a quantised Step3 checkpoint's weights (kvcli sizes fp8 "
        "without an ignore list, AWQ, GPTQ and compressed-tensors): give the weights' measured "
        "size")
