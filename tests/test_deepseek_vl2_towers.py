"""kvcli's weights and buffers for DeepSeek-VL2 (tiny, small, full) against vLLM 0.33.0's own
class, built on the meta device at TP 1, 2, 4 and 8, every rank, alone and under the multimodal
serving options (tests/data/weights_census/mm_omni/deepseek_vl2/answers.json, recorded by
record_towers.py there): the timm SigLIP tower (its MLPs split above TP 1), the projector and
the separators, and the text model read from ``language_config``, where kvcli failed before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import (
    case_geometry,
    case_mm,
    refused_tps,
)

DATA = Path(__file__).parent / "data" / "weights_census" / "mm_omni" / "deepseek_vl2"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]


def _config(base: str) -> dict:
    return json.loads((DATA / f"{base}.config.json").read_text())


def _geometry(name: str, *, applied: bool = True):
    return case_geometry(DATA, CASES, name, applied=applied)


REFUSED = refused_tps(CASES)


@pytest.mark.parametrize(("name", "tp"), REFUSED)
def test_what_vllm_cannot_build_kvcli_refuses(name: str, tp: int) -> None:
    """The tiny text model's 10 heads refuse TP 4 and 8 (deepseek_v2.py's bare assert)."""
    assert {p.values[1] for p in REFUSED} == {4, 8} and name.startswith("deepseek-vl2-tiny")
    assert CASES[name]["tp"][str(tp)][0]["refused"] == "AssertionError: "
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=_geometry(name, applied=False), tensor_parallel_size=tp,
                                gpu_memory_gib=80, max_model_len=4096, mm=case_mm(CASES[name]))
    assert e.value.field == "tensor_parallel_size"


@pytest.mark.parametrize(("base", "total", "whole"), [
    # timm's so400m SigLIP (its pooling head included), the 2-layer projector over 2 x 2
    # patches, the two separators; the 28 timm MLPs split above TP 1
    ("deepseek-vl2-tiny", 435_767_360, 157_987_200),
])
def test_tower_sizes(base: str, total: int, whole: int) -> None:
    """vLLM's tower at TP 1 (and whole: twice its TP 2 rank's less it): the full build less the
    --language-model-only one, which keeps the separators (2 x n_embed)."""
    g = read_hf_config(_config(base), name=base)
    full, lmo = CASES[base]["tp"], CASES[f"{base} --language-model-only"]["tp"]
    kept = 2 * _config(base)["projector_config"]["n_embed"]
    assert total - kept == full["1"][0]["param_numel"] - lmo["1"][0]["param_numel"]
    assert whole - kept == 2 * (full["2"][0]["param_numel"] - lmo["2"][0]["param_numel"]) - (
        total - kept)
    assert (g.vision_params, g.vision_whole, g.vision_kept) == (total, whole, kept)


def test_the_tower_is_vllms_named_timm_model_whatever_vision_config_says() -> None:
    cfg = _config("deepseek-vl2-tiny")
    cfg["vision_config"].update(width=64, layers=2, heads=2)
    assert read_hf_config(cfg).vision_params == 435_767_360


def test_blocks_at_80_gib_and_no_uncounted_tower_warning() -> None:
    """(before: "missing 'num_hidden_layers'", the top level read for the text model)"""
    res = CliRunner().invoke(app, ["config", "--model-config",
                                   str(DATA / "deepseek-vl2-tiny.config.json"),
                                   "--gpu-memory-gib", "80", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert not [w for w in out["warnings"] if "multimodal tower" in w]
    assert out["num_blocks"] == 73_532
