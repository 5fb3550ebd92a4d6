"""Nemotron-NAS's quantised checkpoints (ModelOpt FP8 / NVFP4, fp8) sized a rank as vLLM 0.33
builds them, checked against tests/data/nemotron_nas_quant/ (recorded; never the oracle)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models import read_hf_config
from kvcore.models.quantization import check_build
from kvcore.models.weights import estimate_weights_bytes

DATA = Path(__file__).parent / "data" / "nemotron_nas_quant"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
GiB = 1 << 30
RANKS = [(n, tp) for n, c in CASES.items() for tp in c["tp"]]


def _cfg(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.config.json").read_text())


def _config(name: str, *args: str) -> Any:
    return CliRunner().invoke(app, ["config", "--model-config", str(DATA / f"{name}.config.json"),
                                    "--gpu-memory-gib", "80", "--max-model-len",
                                    "4096" if name.startswith("tiny") else "131072", *args])


def test_what_was_recorded() -> None:
    assert len(CASES) == 10
    built = [(n, tp) for n, tp in RANKS if "refused" not in CASES[n]["tp"][tp]]
    assert len(built) == 34
    # (Super-49B's ModelOpt FP8 at TP 1: 1 byte a linear weight, a weight and an input scale
    # a linear (float32), bfloat16 the embedding, head, norms and attention's four scales)
    assert CASES["super-49b-v1_5-modelopt-fp8"]["tp"]["1"]["param_bytes_by_dtype"] == {
        "bfloat16": 4_204_822_920, "float8_e4m3fn": 47_764_733_952, "float32": 3_488}


@pytest.mark.parametrize(("name", "tp"), RANKS)
def test_a_ranks_weights_are_vllms(name: str, tp: str) -> None:
    """Every rank's bytes as vLLM built it, or vLLM's refusal refused here too."""
    rank = CASES[name]["tp"][tp]
    if "refused" in rank and "some but not all" in rank["refused"][0]:
        with pytest.raises(InputError, match="names some but not all shards of model.layers.0"):
            read_hf_config(_cfg(name), source=f"{name}.json")
        return
    if "refused" in rank:
        assert _config(name, "--tensor-parallel-size", tp).exit_code == 2
        return
    g = read_hf_config(_cfg(name), source=f"{name}.json")
    check_build(g, int(tp), False)
    assert estimate_weights_bytes(g, int(tp)) == sum(rank["param_bytes_by_dtype"].values())


@pytest.mark.parametrize(("name", "tp", "blocks"), [
    ("super-49b-v1_5-modelopt-fp8", "1", 8_415), ("super-49b-v1_5-modelopt-fp8", "2", 33_013),
    ("super-49b-v1_5-modelopt-nvfp4", "1", 14_922),
    ("super-49b-v1_5-modelopt-nvfp4", "2", 39_521),
    ("super-49b-v1_5-fp8", "1", 8_415), ("super-49b-v1_5-fp8", "2", 33_013)])
def test_80_gib_as_vllm_plans_it(name: str, tp: str, blocks: int) -> None:
    """`kvcli config --gpu-memory-gib 80`: 80 GiB x 0.92 less a rank's weights and buffers as
    vLLM built them; vLLM's planner on what is left gives the same blocks (before: refused,
    asking for --weights-gib)."""
    rank0 = CASES[name]["tp"][tp]
    plan = rank0["planning_80_gib"]
    r = _config(name, "--tensor-parallel-size", tp, "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    weights = sum(rank0["param_bytes_by_dtype"].values())
    buffers = sum(rank0["buffer_bytes_by_dtype"].values())
    assert d["memory"]["available_kv_cache_bytes"] == int(80 * GiB * 0.92) - weights - buffers \
        == plan["available"]
    assert (d["num_blocks"], d["kv_cache_tokens"]) == (
        plan["num_blocks"], plan["kv_cache_tokens"]) == (blocks, blocks * 16)


def test_other_methods_still_ask_for_the_weights() -> None:
    """AWQ is not counted for this class: refused, the measured size asked for."""
    cfg = {**_cfg("tiny-nas-a-fp8"), "quantization_config": {
        "quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}}
    g = read_hf_config(cfg, source="x.json")
    with pytest.raises(InputError, match="but ModelOpt's and fp8's"):
        estimate_weights_bytes(g, 1)
