"""LongCat-Flash as an fp8 block checkpoint (LongCat-Flash-Chat-FP8's method) against vLLM
0.33.0's own class (tests/data/weights_census/longcat_fp8/answers.json, every rank at TP 1, 2,
4 and 8): every linear and expert in fp8 with float32 128 x 128 block scales, the router
float32, the embedding, norms and LM head in bf16. Before, kvcli refused a quantised LongCat
checkpoint's weights ("not estimated"); it still refuses what it does not size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_weights_bytes
from tests.census_rows import assert_rank_equal, built_ranks, case_geometry

HERE = Path(__file__).parent / "data" / "weights_census" / "longcat_fp8"
CASES = {n.split("/")[-1].removesuffix(".config.json"): c
         for n, c in json.loads((HERE / "answers.json").read_text())["cases"].items()}


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES))
def test_each_rank_is_vllms_bytes(name: str, tp: int, rank: int) -> None:
    assert_rank_equal(case_geometry(HERE, CASES, name), tp, CASES[name]["tp"][str(tp)][rank])


def test_the_recorded_numbers() -> None:
    """The published shapes at 2 decoder layers, TP 1: 39,922,958,336 B in fp8, 47,502,080 in
    float32 (the routers, score biases and block scales), 3,221,352,448 in bf16."""
    assert len(built_ranks(CASES)) == 30
    rec = CASES["longcat-flash-l2-fp8"]["tp"]["1"][0]["param_bytes_by_dtype"]
    assert rec == {"bfloat16": 3_221_352_448, "float8_e4m3fn": 39_922_958_336,
                   "float32": 47_502_080}
    g = case_geometry(HERE, CASES, "longcat-flash-l2-fp8")
    assert estimate_weights_bytes(g, 1) == sum(rec.values())


@pytest.mark.parametrize("quant", [
    {"quant_method": "fp8", "activation_scheme": "dynamic"},
    {"quant_method": "fp8", "weight_block_size": [128, 128], "activation_scheme": "dynamic",
     "ignored_layers": ["model.layers.0.mlps.0.down_proj"]},
])
def test_what_kvcli_does_not_size_is_refused(quant: dict) -> None:
    cfg = json.loads((HERE / "longcat-flash-l2-fp8.config.json").read_text())
    g = read_hf_config(dict(cfg, quantization_config=quant), name="lc")
    with pytest.raises(InputError) as e:
        estimate_weights_bytes(g, 1)
    assert e.value.message == (
        "lc: kvcli does not estimate a quantised LongCat-Flash checkpoint's weights (kvcli "
        "sizes fp8 in blocks, no module left unquantised): give the weights' measured size")
