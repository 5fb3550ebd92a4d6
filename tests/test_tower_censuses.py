"""kvcli's weights and buffers against vLLM 0.33.0's own classes, built on the meta device at
TP 1, 2, 4 and 8, every rank, for each recorded census of multimodal towers (and Llama 4's
interleaved MoE): the bytes a rank holds and its buffers, exactly, and the parameter count.
Each folder under tests/data/weights_census/ holds its configs, vLLM's answers (answers.json,
``cases``) and a README with the recorder's command; a case vLLM refused to build as a class
(its record ``refused``) is left to its folder's own test file, with the refusals, warnings
and serving options each family has."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
           "mm_step3/step3p5": (3, 3),
           "mm_cohere": (10, 31),
           "mm_ocr": (8, 24),
           "mm_ovis": (14, 33),
           "mm_audio2": (18, 45),
           "mm_towers12b": (13, 38),
           "mm_towers12": (11, 38)}
# (quantised checkpoints: packed tensors count otherwise than kvcli's parameters, and a case
# vLLM refuses at TP 1; their refusals and warnings are tests/test_quant_towers3.py's)
QUANTISED = ("quant_towers3", "quant_dsvl2")
ALL = {f: json.loads((ROOT / f / "answers.json").read_text())["cases"] for f in FOLDERS}
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
