"""Nemotron-NAS's quantised checkpoints (ModelOpt FP8, NVFP4, fp8) over pipeline stages
against vLLM 0.33.0's own build of every stage and its engine core's planning over them
(tests/data/nemotron_nas_quant/answers_pp.json, record_nas_quant_pp.py: the tiny configs at
TP 1 and 2, PP 2 and 4, 256 MiB a stage; Super's three at TP 1 x PP 2 and 4, TP 2 x PP 4,
Ultra's ModelOpt FP8 at PP 4, 20 GiB a stage): each stage's layers, weights (the linears'
scales, the skipped modules unquantised), buffers and KV cache layers, the plan. 31 of 31
shapes equal, unchanged (kvcli had sized them already, unrecorded)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.models import read_hf_config
from kvcore.models.worker_specs import decoder_layer_of, layer_specs
from kvcore.sizing.pipeline import stage_ranges
from tests.pp_stage_rows import assert_plan_is_vllms, assert_stage_is_vllms

DATA = Path(__file__).parent / "data" / "nemotron_nas_quant"
CASES = json.loads((DATA / "answers_pp.json").read_text())["cases"]
SHAPES = [(n, k) for n, c in CASES.items() for k in c if k.startswith("tp")]
PLANNED = [(n, k) for n, k in SHAPES if "refused" not in CASES[n][k]["planning"]]
STAGES = [(n, k, i) for n, k in SHAPES for i in range(len(CASES[n][k]["stages"]))]


def test_the_cases() -> None:
    assert (len(CASES), len(SHAPES), len(PLANNED), len(STAGES)) == (9, 31, 27, 98)


@pytest.mark.parametrize(("name", "key", "stage"), STAGES)
def test_each_stage_builds_as_vllms(name: str, key: str, stage: int) -> None:
    rec = CASES[name][key]["stages"][stage]
    g = read_hf_config(json.loads((DATA / f"{name}.config.json").read_text()),
                       source=f"{name}.config.json")
    tp, pp = assert_stage_is_vllms(g, key, stage, rec, CASES[name]["max_model_len"])
    r = stage_ranges(g.num_layers, pp)[stage]
    ours = [(s.block_size, s.page_size_bytes) for n, s in layer_specs(g, tp=tp).items()
            if decoder_layer_of(n, g.num_layers) in r]
    assert ours == [(s["block_size"], s["page_size_bytes"]) for s in rec["kv_specs"]]


@pytest.mark.parametrize(("name", "key"), PLANNED)
def test_each_stage_plans_as_vllms(name: str, key: str) -> None:
    assert_plan_is_vllms(DATA / f"{name}.config.json", key, CASES[name]["max_model_len"],
                         CASES[name][key]["planning"])


@pytest.mark.parametrize(("name", "key"), [(n, k) for n, k in SHAPES if (n, k) not in PLANNED])
def test_a_stage_without_attention_is_refused(name: str, key: str) -> None:
    """tiny-nas-b's first layer has no attention: on 4 stages stage 0 holds no KV cache
    layer, and vLLM's planner divides by its 0 bytes a block."""
    assert CASES[name][key]["planning"]["refused"] == [
        "ZeroDivisionError: integer division or modulo by zero"]
    r = CliRunner().invoke(app, ["config", "--model-config", str(DATA / f"{name}.config.json"),
                                 "--gpu-memory-gib", "80", "--tensor-parallel-size", key[2],
                                 "--pipeline-parallel-size", "4"])
    assert r.exit_code == 2
    assert "pipeline stage 0 (layers 0-0) holds no layer with a KV cache" in r.output


def test_super_modelopt_fp8_on_four_stages() -> None:
    """Super's ModelOpt FP8 at TP 2, PP 4 on 20 GiB a stage: the pool is vLLM's."""
    plan = CASES["super-49b-v1_5-modelopt-fp8"]["tp2-pp4"]["planning"]
    d = assert_plan_is_vllms(DATA / "super-49b-v1_5-modelopt-fp8.config.json", "tp2-pp4",
                             131072, plan)
    assert d["num_blocks"] == min(s["fits"] for s in plan["stages"])
