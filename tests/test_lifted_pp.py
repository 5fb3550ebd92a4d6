"""The classes lifted from kvcli's refusals (Sarvam MLA, LongCat-Flash-Lite's n-gram model, RNJ-1,
openPangu Pro MoE V2, Domyn Edge, Unlimited-OCR) over pipeline stages, against vLLM 0.33.0's own
build of every stage and its engine core's planning over them (tests/data/refused_lifted/pp/
answers.json, record_lifted_pp.py: TP 1 and 2, PP 2 and 4, the same memory on every stage). Before:
21 of 35 shapes equal (RNJ-1's stages short of the embedding, norm and head vLLM builds on each and
long of the RoPE caches of layer types they do not hold; Sarvam's and openPangu V2's stages without
a MoE layer sized, which vLLM cannot build); after: 35 of 35. Unlimited-OCR (recorded after its
lift): 15 of 22 stages short of DeepSeek-OCR's two separators, which every stage builds (5,120 B at
1,280 wide); after: 22 of 22."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.models import read_hf_config
from kvcore.models.geometry import ModelGeometry
from kvcore.models.longcat import LONGCAT, decoder_ranges
from kvcore.models.worker_specs import decoder_layer_of, layer_specs
from kvcore.sizing.pipeline import stage_ranges
from tests.pp_stage_rows import (
    assert_plan_is_vllms,
    assert_refused_as_vllm,
    assert_stage_is_vllms,
)

DATA = Path(__file__).parent / "data" / "refused_lifted"
CASES = json.loads((DATA / "pp" / "answers.json").read_text())["cases"]
SHAPES = [(n, k) for n, c in CASES.items() for k in c if k.startswith("tp")]
BUILT = [(n, k) for n, k in SHAPES if "refused" not in CASES[n][k]]
PLANNED = [(n, k) for n, k in BUILT if "refused" not in CASES[n][k]["planning"]]
STAGES = [(n, k, i) for n, k in BUILT for i in range(len(CASES[n][k]["stages"]))]


def _geometry(name: str) -> ModelGeometry:
    return read_hf_config(json.loads((DATA / f"{name}.config.json").read_text()),
                          source=f"{name}.config.json")


def _pp(key: str) -> int:
    return int(key.split("pp")[1])


def test_the_cases() -> None:
    assert (len(SHAPES), len(BUILT), len(PLANNED), len(STAGES)) == (42, 35, 31, 102)
    # (every class but Domyn Edge passes vLLM's SupportsPP check)
    assert {n for n, c in CASES.items() if c["verify"]["2"] != "ok"} == {"tiny-domyn-edge"}


@pytest.mark.parametrize(("name", "key", "stage"), STAGES)
def test_each_stage_builds_as_vllms(name: str, key: str, stage: int) -> None:
    """Its decoder layers, weights (RNJ-1's embedding, final norm and head on every stage;
    the n-gram embedding on LongCat's first; DeepSeek-OCR's tower on Unlimited-OCR's first,
    its separators on every one), buffers (RNJ-1's RoPE caches of its layers'
    types only; openPangu V2's normed sink keys, 393,216 B a layer at TP 1) and KV cache
    layers' pages."""
    g, rec = _geometry(name), CASES[name][key]["stages"][stage]
    # (openPangu V2's sink keys through k_layernorm: a tensor each layer keeps, `scratch`)
    normed = rec["scratch"].get("model.layers.*.self_attn.attn.sink_key", {"bytes": 0})
    tp, pp = assert_stage_is_vllms(g, key, stage, rec, CASES[name]["max_model_len"],
                                   normed["bytes"] * len(rec["kv_specs"]))
    r = stage_ranges(g.num_layers, pp)[stage] if g.model_type != LONGCAT else \
        decoder_ranges(stage_ranges(g.num_layers // 2, pp))[stage]
    ours = [(s.block_size, s.page_size_bytes) for n, s in layer_specs(g, tp=tp).items()
            if decoder_layer_of(n, g.num_layers) in r]
    assert ours == [(s["block_size"], s["page_size_bytes"]) for s in rec["kv_specs"]]


@pytest.mark.parametrize(("name", "key"), PLANNED)
def test_each_stage_plans_as_vllms(name: str, key: str) -> None:
    assert_plan_is_vllms(DATA / f"{name}.config.json", key, CASES[name]["max_model_len"],
                         CASES[name][key]["planning"])


def test_the_published_shapes_numbers() -> None:
    """Sarvam-105B on 20 GiB a stage (TP 2, PP 4): 18,432 B a block at TP 1 for 8 layers,
    the pool vLLM's; RNJ-1's stages each 5,993,934,848 B at TP 1, PP 4 (embedding, norm and
    head on each: 1,050,673,152 B apiece)."""
    plan = CASES["sarvam-105b"]["tp2-pp4"]["planning"]
    d = assert_plan_is_vllms(DATA / "sarvam-105b.config.json", "tp2-pp4", 4096, plan)
    assert d["num_blocks"] == plan["num_blocks"] == min(s["fits"] for s in plan["stages"])
    assert {sum(s["param_bytes_by_dtype"].values())
            for s in CASES["rnj-1"]["tp1-pp4"]["stages"]} == {5_993_934_848}


REFUSED = [(n, k) for n, k in SHAPES if "refused" in CASES[n][k]]


@pytest.mark.parametrize(("name", "key"), REFUSED)
def test_a_stage_without_a_moe_layer_is_refused_in_vllms_words(name: str, key: str) -> None:
    """Sarvam's and openPangu V2's MoE bookkeeping takes one of the stage's MoE blocks: a
    stage of dense layers (the tiny configs' first, on 4 stages) stops vLLM's build."""
    assert CASES[name][key]["stage_refused"] == 0
    words = " ".join(CASES[name][key]["refused"])
    assert_refused_as_vllm(DATA / f"{name}.config.json", key, words)


def test_the_refused_shapes() -> None:
    assert REFUSED == [(n, k) for n in ("tiny-sarvam-mla", "tiny-sarvam-mla-noq")
                       for k in ("tp1-pp4", "tp2-pp4")] + [
        ("tiny-pangu-v2-sink", "tp1-pp4"), ("tiny-pangu-v2-sinkv", "tp1-pp4"),
        ("tiny-pangu-v2-sinkv", "tp2-pp4")]


@pytest.mark.parametrize("key", ["tp1-pp4", "tp2-pp4"])
def test_more_stages_than_longcats_decoder_layers(key: str) -> None:
    """Tiny LongCat (2 decoder layers) on 4 stages: vLLM builds stages 0 and 3 with no layer,
    and its planner divides by their 0 bytes a block; kvcli refuses before."""
    rec = CASES["tiny-longcat-ngram"][key]
    assert [s["layers"] for s in rec["stages"]] == [[0, 0], [0, 1], [1, 2], [2, 2]]
    assert rec["planning"]["refused"] == [
        "ZeroDivisionError: integer division or modulo by zero"]
    r = CliRunner().invoke(app, ["config", "--model-config",
                                 str(DATA / "tiny-longcat-ngram.config.json"),
                                 "--tensor-parallel-size", key[2],
                                 "--pipeline-parallel-size", "4"])
    assert r.exit_code == 2
    assert "2 decoder layers, fewer than 4 stages" in r.output


@pytest.mark.parametrize("pp", [2, 4])
def test_domyn_edge_refused_as_vllms_config_check(pp: int) -> None:
    words = " ".join(CASES["tiny-domyn-edge"]["verify"][str(pp)])
    assert words.startswith("NotImplementedError: Pipeline parallelism is not supported")
    r = CliRunner().invoke(app, ["config", "--model-config",
                                 str(DATA / "tiny-domyn-edge.config.json"),
                                 "--pipeline-parallel-size", str(pp)])
    assert r.exit_code == 2
    assert f'"{words.removeprefix("NotImplementedError: ")}"' in r.output


@pytest.mark.parametrize("key", ["tp1-pp4", "tp2-pp4"])
def test_more_stages_than_unlimited_ocrs_layers(key: str) -> None:
    """Tiny Unlimited-OCR (3 layers) on 4 stages: vLLM builds stage 3 with none and its
    planner divides by its 0 bytes a block; kvcli refuses before."""
    rec = CASES["tiny-unlimited-ocr"][key]
    assert [s["layers"] for s in rec["stages"]][-1] == [3, 3]
    assert rec["planning"]["refused"] == [
        "ZeroDivisionError: integer division or modulo by zero"]
    r = CliRunner().invoke(app, ["config", "--model-config",
                                 str(DATA / "tiny-unlimited-ocr.config.json"),
                                 "--tensor-parallel-size", key[2],
                                 "--pipeline-parallel-size", "4"])
    assert r.exit_code == 2
    assert "3 decoder layers, fewer than 4 stages" in r.output
