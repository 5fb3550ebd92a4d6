"""The text classes vLLM 0.33 serves on its Transformers backend (Arcee, CWM, GLM, HunYuan,
Jais2, OLMo 1-3, FlexOLMo, Seed-OSS, SmolLM3, VaultGemma) against vLLM's own classes on the
meta device (tests/data/weights_census/transformers_rope/, TP 1 and 2, every rank): their
weights, and their buffers, transformers' rotary ``inv_freq`` and ``original_inv_freq``
(float32, half the rotary dim each) beside the attention scales, where kvcli had counted
get_rope's cos/sin cache (max_position_embeddings x the rotary dim, in the model dtype)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.models.buffers import estimate_buffer_bytes
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_params
from tests.census_rows import assert_rank_equal, built_ranks

DATA = Path(__file__).parent / "data" / "weights_census" / "transformers_rope"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]


def _geometry(name: str):
    return read_hf_config(json.loads((DATA / f"{name}.config.json").read_text()), name=name)


def test_every_config_was_built_at_tp_1_and_2() -> None:
    assert sorted(CASES) == sorted(p.name.removesuffix(".config.json")
                                   for p in DATA.glob("*.config.json"))
    assert len(CASES) == 13 and all(list(c["tp"]) == ["1", "2"] for c in CASES.values())
    for c in CASES.values():     # (built on every rank, the two ranks of TP 2 alike)
        assert len(c["tp"]["1"]) == 1 and len(c["tp"]["2"]) == 2
        assert c["tp"]["2"][0]["param_bytes_by_dtype"] == c["tp"]["2"][1]["param_bytes_by_dtype"]


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES))
def test_weights_and_buffers_per_rank_equal_vllms(name: str, tp: int, rank: int) -> None:
    assert_rank_equal(_geometry(name), tp, CASES[name]["tp"][str(tp)][rank])


@pytest.mark.parametrize("name", sorted(CASES))
def test_parameter_count_equals_vllms(name: str) -> None:
    assert estimate_params(_geometry(name))[0] == CASES[name]["tp"]["1"][0]["param_numel"]


@pytest.mark.parametrize(("name", "buffers", "before"), [
    # (8 layers' attention scales, 128 B, and inv_freq twice: 16 float32 each for a head of
    # 32; GLM rotates half of it; VaultGemma's normalizer, 2 B of bfloat16, beside them)
    ("tiny-seed_oss", 256, 33_554_560), ("tiny-glm", 192, 4_194_432),
    ("tiny-vaultgemma", 258, 524_416)])
def test_the_buffers_are_transformers_rotary(name: str, buffers: int, before: int) -> None:
    rec = CASES[name]["tp"]["1"][0]["buffer_bytes_by_dtype"]
    assert sum(sum(by.values()) for by in rec.values()) == buffers
    assert estimate_buffer_bytes(_geometry(name), 1) == buffers != before
