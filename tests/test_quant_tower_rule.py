"""`int_quant_rank.modelled`'s AWQ tower rule against vLLM 0.33.0 (tests/data/weights_census/
quant_tower_rule/, TP 1 and 2, every rank): a class whose tower vLLM builds with the
quant_config at ``vision_tower`` and ``multi_modal_projector`` but whose tower linears
`kvcore.models.tower_int_quant` does not list (LLaVA-NeXT-Video, Command A Vision, Aria,
LightOnOCR, Phi-4-reasoning-vision) is sized only where ``modules_to_not_convert`` names both:
AWQ matches them as substrings of vLLM's paths, so the tower stays in the model dtype, as kvcli
counts it. Still needed: without it these checkpoints were counted unquantised with a warning.
Where nothing is skipped vLLM packs the tower (or refuses a tower width AWQ's groups do not
divide), which kvcli does not size: its warning stands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.models import int_quant_rank, tower_int_quant
from kvcore.models.hf_config import read_hf_config
from kvcore.models.llama4_vision import TOWER_WITHOUT_QUANT_CONFIG
from kvcore.models.weights import estimate_weights_bytes
from tests.census_rows import built_ranks

HERE = Path(__file__).parent / "data" / "weights_census" / "quant_tower_rule"
CASES = json.loads((HERE / "answers.json").read_text())["cases"]
SKIPPED = {n: c for n, c in CASES.items() if n.endswith("-skip-tower")}


def _geometry(name: str):
    return read_hf_config(json.loads((HERE / f"{name}.config.json").read_text()), name=name)


def test_every_config_was_recorded() -> None:
    assert sorted(CASES) == sorted(p.name.removesuffix(".config.json")
                                   for p in HERE.glob("*.config.json"))
    assert len(SKIPPED) == 5 and all(
        "refused" not in r for c in SKIPPED.values() for rs in c["tp"].values() for r in rs)


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(SKIPPED))
def test_a_tower_left_out_by_the_list_is_sized_as_vllm_builds_it(name: str, tp: int,
                                                                 rank: int) -> None:
    g = _geometry(name)
    assert g.architecture not in tower_int_quant.PREFIXES
    assert g.architecture not in TOWER_WITHOUT_QUANT_CONFIG
    assert int_quant_rank.modelled(g) is not None       # (the rule, and nothing else)
    rec = CASES[name]["tp"][str(tp)][rank]
    assert estimate_weights_bytes(g, tp) == sum(rec["param_bytes_by_dtype"].values())
    assert not any(k.startswith(("vision_tower", "multi_modal_projector")) and "qweight" in k
                   for k in CASES[name]["tp"]["1"][0]["param_numel_by_name"])


@pytest.mark.parametrize("name", sorted(n.removesuffix("-skip-tower") for n in SKIPPED))
def test_a_packed_tower_is_left_to_the_warning(name: str) -> None:
    """vLLM packs the tower (its int32 qweights) or refuses it; kvcli does not model it."""
    assert int_quant_rank.modelled(_geometry(name)) is None
    first = CASES[name]["tp"]["1"][0]
    assert "refused" in first or any(
        k.startswith("vision_tower") and k.endswith("qweight")
        for k in first["param_numel_by_name"])


def test_the_recorded_numbers() -> None:
    """Command A Vision's tiny config at TP 1: 2,688,048 B with the tower left out, 2,522,160
    packed (kvcli's unquantised count of that one: 5,986,864, with its warning)."""
    assert estimate_weights_bytes(_geometry("tiny-cohere2-vision-awq-skip-tower"), 1) \
        == 2_688_048
    assert sum(CASES["tiny-cohere2-vision-awq"]["tp"]["1"][0]["param_bytes_by_dtype"].values()) \
        == 2_522_160
