"""DeepSeek-V4 over pipeline stages against vLLM 0.33.0's own build and planning of each stage
(tests/data/deepseek_v4/pp/answers.json, record_dsv4_pp.py: tiny-dsv4 and Flash at TP 1 x PP 2,
TP 1 x PP 4 and TP 2 x PP 2, the same memory on every stage): each stage's layers, weights,
buffers and KV cache layers, the whole model's packed groups projected onto its layers, its
pool block and the blocks it fits, the pool (the fewest), and the capacity vLLM logs; tiny on 4
stages, where some stages hold no C4 layer, refused in vLLM's words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.models import read_hf_config
from kvcore.models.weights import estimate_weights_bytes
from kvcore.models.worker_specs import decoder_layer_of, layer_specs
from kvcore.sizing.buffers_term import buffer_bytes
from kvcore.sizing.pipeline import stage_ranges
from kvcore.sizing.resolve import resolve_kv_cache_config

DATA = Path(__file__).parent / "data" / "deepseek_v4"
CASES = json.loads((DATA / "pp" / "answers.json").read_text())["cases"]
SHAPES = [(n, k) for n, c in CASES.items() for k in c if k.startswith("tp")]
PLANNED = [(n, k) for n, k in SHAPES if "refused" not in CASES[n][k]["planning"]]
STAGES = [(n, k, i) for n, k in SHAPES for i in range(len(CASES[n][k]["stages"]))]
GiB = 1 << 30


def _geometry(name: str):
    return read_hf_config(json.loads((DATA / f"{name}.config.json").read_text()),
                          source=f"{name}.json")


def _shape(key: str) -> tuple[int, int]:
    return int(key[2]), int(key.split("pp")[1])


def _config(name: str, key: str, *args: str):
    tp, pp = _shape(key)
    plan = CASES[name][key]["planning"]
    return CliRunner().invoke(app, [
        "config", "--model-config", str(DATA / f"{name}.config.json"), "--max-model-len",
        str(CASES[name]["max_model_len"]), "--gpu-memory-gib", repr(plan["available"] / GiB),
        "--gpu-memory-utilization", "1", "--weights-gib", "0", "--tensor-parallel-size",
        str(tp), "--pipeline-parallel-size", str(pp), *args])


def test_the_cases() -> None:
    assert len(SHAPES) == 6 and len(PLANNED) == 5 and len(STAGES) == 16
    # (async scheduling, the V2 model runner: PP + 1 batches in flight, 2,048 tokens each)
    assert [CASES[n][k]["planning"]["max_in_flight_tokens"] for n, k in PLANNED] == [
        6144, 6144, 6144, 10240, 6144]


@pytest.mark.parametrize(("name", "key"), PLANNED)
def test_each_stage_plans_as_vllms(name: str, key: str) -> None:
    """Flash at PP 2: stages of 481,536 and 479,808 bytes a block fit 44,596 and 44,757 blocks
    of 20 GiB, the pool 44,596; 6,618 blocks a request (three batches in flight: 2,048 x 3
    tokens the windows reserve), 8,081,972 tokens (vLLM's 'GPU KV cache size'), 6.74x."""
    plan = CASES[name][key]["planning"]
    tp, pp = _shape(key)
    r = _config(name, key, "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert [(s["bytes_per_block"], s["num_blocks"]) for s in d["stages"]] == [
        (s["bytes_per_block"], s["fits"]) for s in plan["stages"]]
    assert (d["num_blocks"], d["kv_cache_tokens"]) == (plan["num_blocks"],
                                                       plan["kv_cache_tokens"])
    assert d["max_concurrency"] == pytest.approx(plan["max_concurrency"], rel=1e-12)
    assert d["max_in_flight_tokens"] == plan["max_in_flight_tokens"]
    res = resolve_kv_cache_config(geometry=_geometry(name), tensor_parallel_size=tp,
                                  pipeline_parallel_size=pp,
                                  max_model_len=CASES[name]["max_model_len"],
                                  gpu_memory_gib=plan["available"] / GiB,
                                  gpu_memory_utilization=1, weights_gib=0)
    for ours, theirs in zip(res.stages, plan["stages"], strict=True):
        assert [(len(g.layer_names), g.kv_cache_spec.page_size_bytes) for g in ours.groups] \
            == [(len(g["layers"]), g["page_size_bytes"]) for g in theirs["groups"]]
        assert [[n for n in g.layer_names] for g in ours.groups] == [
            [n.removeprefix("model.") for n in g["layers"]] for g in theirs["groups"]]


@pytest.mark.parametrize(("name", "key", "stage"), STAGES)
def test_each_stage_builds_as_vllms(name: str, key: str, stage: int) -> None:
    """Its decoder layers, weights (the embedding on the first stage, the head on the last,
    the hc_head mixes on each), buffers with the top-k scratch (every stage's: 2,048 x 512
    int32 for Flash) and KV cache layers."""
    rec = CASES[name][key]["stages"][stage]
    g = _geometry(name)
    tp, pp = _shape(key)
    r = stage_ranges(g.num_layers, pp)[stage]
    assert [r.start, r.stop] == rec["layers"]
    where = (r, stage == 0, stage == pp - 1)
    assert estimate_weights_bytes(g, tp, where) == sum(rec["param_bytes_by_dtype"].values())
    assert buffer_bytes(g, tp, None, CASES[name]["max_model_len"], *where,
                        batched_tokens=2048) == sum(rec["buffer_bytes_by_dtype"].values()) + sum(
        t["bytes"] for t in rec["scratch"].values())
    ours = {n: s.page_size_bytes for n, s in layer_specs(g).items()
            if decoder_layer_of(n, g.num_layers) in r}
    assert ours == {s["name"].removeprefix("model."): s["page_size_bytes"]
                    for s in rec["kv_specs"]}


def test_four_stages_of_tiny_are_refused_in_vllms_words() -> None:
    """Stages 0 and 2 (a C128 layer, the sliding-only one) hold no indexer, whose backend alone
    declares its layouts: the workers disagree and vLLM's engine core stops at its assertion."""
    words = " ".join(CASES["tiny-dsv4"]["tp1-pp4"]["planning"]["refused"])
    r = _config("tiny-dsv4", "tp1-pp4")
    assert r.exit_code == 2
    assert r.output == ("error: option --pipeline-parallel-size: deepseek_v4 on 4 pipeline "
                        "stages: vLLM 0.33 refuses to start: "
                        f"\"{words.removeprefix('AssertionError: ')}\"\n")
