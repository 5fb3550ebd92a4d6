"""A pipeline stage recorded from vLLM 0.33 (a census's ``cases[name]["tpNppM"][stage]``:
its decoder layers, parameter bytes and buffers by dtype) against kvcli's, shared by
tests/test_step3_pp.py, test_dsv32_pp.py, test_mimo_v2_pp.py, test_kimi_linear_pp.py,
test_lifted_pp.py and test_nemotron_nas_quant_pp.py; and the engine core's plan over all the
stages (`assert_plan_is_vllms`), or vLLM's refusal of a stage (`assert_refused_as_vllm`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.models import read_hf_config
from kvcore.models.geometry import ModelGeometry
from kvcore.models.longcat import LONGCAT, decoder_ranges
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.buffers_term import buffer_bytes
from kvcore.sizing.pipeline import stage_ranges
from kvcore.sizing.resolve import resolve_kv_cache_config

GiB = 1 << 30


def assert_stage_is_vllms(g: ModelGeometry, key: str, stage: int, rec: dict,
                          max_model_len: int = 4096, kept: int = 0) -> tuple[int, int]:
    """The stage's layers, weights and buffers (at the max_model_len recorded; with `kept`,
    the bytes of the plain tensors its modules keep, which kvcli counts as buffers) equal
    vLLM's; the TP and PP sizes `key` names. Buffers by dtype, or by name and then dtype."""
    tp, pp = int(key[2]), int(key.split("pp")[1])
    r = stage_ranges(g.num_layers, pp)[stage]
    if g.model_type == LONGCAT:     # (vLLM splits the decoder layers, two of kvcli's each)
        r = stage_ranges(g.num_layers // 2, pp)[stage]
        assert [r.start, r.stop] == rec["layers"]
        r = decoder_ranges([r])[0]
    else:
        assert [r.start, r.stop] == rec["layers"]
    first, last = stage == 0, stage == pp - 1
    assert estimate_weights_bytes(g, tp, (r, first, last)) \
        == sum(rec["param_bytes_by_dtype"].values())
    buffers = rec["buffer_bytes_by_dtype"].values()
    assert buffer_bytes(g, tp, None, max_model_len, r, first, last) == kept + sum(
        sum(b.values()) if isinstance(b, dict) else b for b in buffers)
    return tp, pp


def assert_plan_is_vllms(config: Path, key: str, max_model_len: int, plan: dict) -> dict:
    """`kvcli config` on the memory every stage was given (`plan`: a recorder's `planning` row,
    ../deepseek_v4/pp/record_dsv4_pp.py's) plans as vLLM's engine core did over all stages:
    each stage's bytes a block and the blocks it fits, the pool (the fewest), the tokens and
    concurrency vLLM logs, each stage's groups (layers and page); kvcli's JSON returned."""
    tp, pp = int(key[2]), int(key.split("pp")[1])
    r = CliRunner().invoke(app, [
        "config", "--model-config", str(config), "--max-model-len", str(max_model_len),
        "--gpu-memory-gib", repr(plan["available"] / GiB), "--gpu-memory-utilization", "1",
        "--weights-gib", "0", "--tensor-parallel-size", str(tp),
        "--pipeline-parallel-size", str(pp), "--json"])
    assert r.exit_code == 0, r.output
    d: dict = json.loads(r.stdout)
    assert [(s["bytes_per_block"], s["num_blocks"]) for s in d["stages"]] == [
        (s["bytes_per_block"], s["fits"]) for s in plan["stages"]]
    assert (d["num_blocks"], d["kv_cache_tokens"], d["max_in_flight_tokens"]) == (
        plan["num_blocks"], plan["kv_cache_tokens"], plan["max_in_flight_tokens"])
    assert d["max_concurrency"] == pytest.approx(plan["max_concurrency"], rel=1e-12)
    g = read_hf_config(json.loads(config.read_text()), source=config.name)
    res = resolve_kv_cache_config(geometry=g, tensor_parallel_size=tp,
                                  pipeline_parallel_size=pp, max_model_len=max_model_len,
                                  gpu_memory_gib=plan["available"] / GiB,
                                  gpu_memory_utilization=1, weights_gib=0)
    assert [(len(grp.layer_names), grp.kv_cache_spec.block_size,
             grp.kv_cache_spec.page_size_bytes) for grp in res.config.kv_cache_groups] == [
        (len(x["layers"]), x["block_size"], x["page_size_bytes"]) for x in plan["global_groups"]]
    for ours, theirs in zip(res.stages, plan["stages"], strict=True):
        assert [(len(grp.layer_names), grp.kv_cache_spec.page_size_bytes)
                for grp in ours.groups] == [(len(x["layers"]), x["page_size_bytes"])
                                            for x in theirs["groups"]]
    return d


def assert_refused_as_vllm(config: Path, key: str, words: str) -> None:
    """`kvcli config` refuses the stages vLLM could not build (its error, `words`, quoted)."""
    tp, pp = int(key[2]), int(key.split("pp")[1])
    r = CliRunner().invoke(app, ["config", "--model-config", str(config), "--gpu-memory-gib",
                                 "80", "--tensor-parallel-size", str(tp),
                                 "--pipeline-parallel-size", str(pp)])
    assert r.exit_code == 2
    assert f"on {pp} pipeline stages: vLLM 0.33 refuses to build it: \"{words}\"" in r.output
