"""Voxtral's Whisper encoder and Molmo's tower and language model quantised, against vLLM
0.33.0's classes built on the meta device at TP 1, 2, 4 and 8
(tests/data/weights_census/quant_voxtral/ and quant_molmo/, recorded by the scripts there):
every built rank's bytes and buffers, and every refusal. Before, kvcli counted Voxtral's encoder
in the model dtype under every method (fp8 silently, int methods with the unquantised warning)
and refused every quantised Molmo checkpoint by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.int_quant_rank import unquantised_method
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

CENSUS = Path(__file__).parent / "data" / "weights_census"
DATA = {n: CENSUS / n for n in ("quant_voxtral", "quant_molmo")}
CASES = {folder: json.loads((d / "answers.json").read_text())["cases"]
         for folder, d in DATA.items()}


def _rows(pick) -> list:
    return [pytest.param(folder, *p.values, id=p.id) for folder, cases in CASES.items()
            for p in pick(cases)]


def test_every_case_recorded_and_its_ranks_agree() -> None:
    assert [len(c) for c in CASES.values()] == [6, 6]
    for cases in CASES.values():
        check_ranks_agree(cases)


@pytest.mark.parametrize(("folder", "name", "tp", "rank"), _rows(built_ranks))
def test_bytes_and_buffers_per_rank_equal_vllms(folder: str, name: str, tp: int,
                                                rank: int) -> None:
    g = case_geometry(DATA[folder], CASES[folder], name)
    assert unquantised_method(g) is None
    assert_rank_equal(g, tp, CASES[folder][name]["tp"][str(tp)][rank])


@pytest.mark.parametrize(("folder", "name", "tp"), _rows(refused_tps))
def test_what_vllm_cannot_build_kvcli_refuses(folder: str, name: str, tp: int) -> None:
    """In vLLM's words where kvcli meets the same shard first; Voxtral's 4 encoder heads at TP 8
    kvcli refuses before its language model's o_proj, which vLLM builds first (its words for
    AWQ, W4A16 and fp8 blocks there), the heads' AssertionError for the rest."""
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=case_geometry(DATA[folder], CASES[folder], name),
                                tensor_parallel_size=tp, gpu_memory_gib=80, max_model_len=4096)
    assert e.value.field == "tensor_parallel_size"
    if folder == "quant_voxtral" and tp == 8:
        assert "vision tower has 4 attention heads" in e.value.message
        return
    said = vllms_words(CASES[folder][name]["tp"][str(tp)][0]["refused"]).rstrip(": ")
    assert said in e.value.message


@pytest.mark.parametrize("method", ["quark", "torchao"])
def test_molmo_under_methods_kvcli_does_not_size_is_refused_by_name(method: str) -> None:
    cfg = json.loads((DATA["quant_molmo"] / "tiny-molmo-fp8.config.json").read_text())
    g = read_hf_config({**cfg, "quantization_config": {"quant_method": method}}, name="x")
    with pytest.raises(InputError, match="a quantised Molmo checkpoint's vision tower"):
        estimate_weights_bytes(g, 1)
