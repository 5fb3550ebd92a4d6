"""kvcli's weights and buffers against vLLM 0.33.0's own classes, built on the meta device at
TP 1, 2, 4 and 8, every rank, for each recorded census of multimodal towers (and Llama 4's
interleaved MoE): the bytes a rank holds and its buffers, exactly, and the parameter count;
and the KV specs at TP 1 where a census recorded them (`kv_specs`).
Each folder under tests/data/weights_census/ holds its configs, vLLM's answers (answers.json,
``cases``) and a README with the recorder's command; a case vLLM refused to build as a class
(its record ``refused``) is left to its folder's own test file, with the refusals, warnings
and serving options each family has."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kv_census_rows import kvcli_specs, same, vllm_specs

from kvcore.errors import InputError
from kvcore.models.weights import estimate_params
from tests.census_rows import (
    assert_rank_equal,
    built_ranks,
    case_geometry,
    check_ranks_agree,
    conv_views,
)

ROOT = Path(__file__).parent / "data" / "weights_census"
# folder: (its config files, its cases)
FOLDERS = {"llava_towers": (19, 39), "glm_kimi_towers": (5, 18), "llama4_moe": (7, 14),
           "internvl_chat": (22, 48), "mm_minicpm_idefics_phi": (16, 44), "mm_omni": (4, 17),
           "mm_omni/deepseek_vl2": (3, 8), "quant_towers3": (86, 97),
           "quant_dsvl2": (13, 13),
           "mm_ernie": (10, 19),
           "mm_nemo": (7, 17),
           "mm_audio": (14, 36), "mm_step3": (6, 17),
           "mm_step3/step3p5": (4, 4), "layer_heads_tp": (3, 3),
           "mm_cohere": (10, 31),
           "mm_ocr": (8, 24),
           "mm_ovis": (14, 33),
           "mm_audio2": (18, 45),
           "mm_towers12b": (13, 38),
           "mm_towers12": (11, 38),
           "mm_molmo2": (6, 12)}
# (quantised checkpoints: packed tensors count otherwise than kvcli's parameters, and a case
# vLLM refuses at TP 1; their refusals and warnings are tests/test_quant_towers3.py's)
QUANTISED = ("quant_towers3", "quant_dsvl2")
ANSWERS = {f: json.loads((ROOT / f / "answers.json").read_text()) for f in FOLDERS}
ALL = {f: answers["cases"] for f, answers in ANSWERS.items()}
# the folders whose answers also hold vLLM's KV specs at TP 1 (`kv_specs`): the configs vLLM
# built them for (the others' rows keep the words it refused with, `skipped`)
KV_BUILT = {"mm_minicpm_idefics_phi": 16, "mm_audio": 12, "mm_ocr": 8, "mm_ovis": 14,
            "mm_audio2": 17, "mm_towers12b": 13}
KV = {f: {b: r for b, r in ANSWERS[f]["kv_specs"].items() if "specs" in r} for f in KV_BUILT}
BUILT = {f: {n: c for n, c in cases.items() if "refused" not in c} for f, cases in ALL.items()}
# (AWQ's packed int32 tensors count eight weights an element: the bytes test checks them)
COUNTED = [pytest.param(f, n, id=f"{f}:{n}") for f, cases in BUILT.items()
           for n in sorted(cases)
           if ("-awq" not in n or f != "llava_towers") and f not in QUANTISED]


@pytest.mark.parametrize(("folder", "name", "tp", "rank"), [
    pytest.param(f, *p.values, id=f"{f}:{p.id}") for f, cases in BUILT.items()
    for p in built_ranks(cases)])
def test_bytes_and_buffers_per_rank_equal_vllms(folder: str, name: str, tp: int,
                                                rank: int) -> None:
    g = case_geometry(ROOT / folder, BUILT[folder], name)
    ranks = BUILT[folder][name]["tp"][str(tp)]
    assert_rank_equal(g, tp, ranks[rank], conv_views(g, ranks[0]))


@pytest.mark.parametrize(("folder", "name"), COUNTED)
def test_parameter_count_equals_vllms(folder: str, name: str) -> None:
    g = case_geometry(ROOT / folder, BUILT[folder], name)
    assert estimate_params(g) == (BUILT[folder][name]["tp"]["1"][0]["param_numel"], 0)


@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_the_census_covers_every_config_and_tp(folder: str) -> None:
    bases = {p.name.removesuffix(".config.json") for p in (ROOT / folder).glob("*.config.json")}
    assert bases == {n.split(" ")[0] for n in ALL[folder]}
    assert (len(bases), len(ALL[folder])) == FOLDERS[folder]
    check_ranks_agree({n: c for n, c in BUILT[folder].items()
                       if folder not in QUANTISED or "refused" not in c["tp"]["1"][0]})


@pytest.mark.parametrize("folder", sorted(KV_BUILT))
def test_the_kv_specs_cover_the_configs_vllm_built(folder: str) -> None:
    assert len(KV[folder]) == KV_BUILT[folder]


@pytest.mark.parametrize(("folder", "base"), [
    pytest.param(f, b, id=f"{f}:{b}") for f, rows in KV.items() for b in sorted(rows)])
def test_kv_specs_equal_vllms(folder: str, base: str) -> None:
    """Every built config's KV specs at TP 1, as vLLM collects them."""
    row = KV[folder][base]
    ours = kvcli_specs(row, row["config"]["architectures"][0])
    assert not isinstance(ours, InputError) and same(ours, vllm_specs(row))
