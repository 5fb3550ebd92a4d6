"""DeepSeek configs that leave `n_routed_experts` out, against vLLM 0.33.0's builds
(tests/data/weights_census/class_defaults/answers.json, every rank at TP 1, 2, 4 and 8): the
config class's default experts (DeepseekV2Config 64, DeepseekV3Config 256, kimi_k2 read with
DeepseekV3Config) are built, weights and buffers equal on every rank; perf.py's count of one
is tests/data/perf_configs/d1-deepseek_v3-no-routed-experts (tests/test_vllm_count.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.census_rows import assert_rank_equal, built_ranks, case_geometry

HERE = Path(__file__).parent / "data" / "weights_census" / "class_defaults"
CASES = {n.split("/")[-1].removesuffix(".config.json"): c
         for n, c in json.loads((HERE / "answers.json").read_text())["cases"].items()}


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES))
def test_each_rank_is_vllms_bytes(name: str, tp: int, rank: int) -> None:
    assert_rank_equal(case_geometry(HERE, CASES, name), tp, CASES[name]["tp"][str(tp)][rank])


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_class_default_is_vllms_experts(name: str) -> None:
    g = case_geometry(HERE, CASES, name)
    assert g.num_experts == CASES[name]["get_num_experts"]


def test_the_census_holds_what_was_drawn() -> None:
    assert len(built_ranks(CASES)) == 45
    assert {n: c["get_num_experts"] for n, c in CASES.items()} == {
        "deepseek-v2-lite-no-routed-experts": 64, "deepseek-v3-no-routed-experts": 256,
        "kimi-k2-no-routed-experts": 256}
    # (kvcli read Kimi-K2 as dense: 1,190,803,456 B a rank at TP 8 for vLLM's 9,393,292,288)
    assert sum(CASES["kimi-k2-no-routed-experts"]["tp"]["8"][0][
        "param_bytes_by_dtype"].values()) == 9_393_292_288
