"""Kimi Linear on pipeline stages against vLLM 0.33.0's own build of each stage and its engine
core's planning over them (tests/data/kimi_linear/pp_answers.json, record_kimi_linear_pp.py:
the tiny config at TP 1 and 2, the published one at TP 1 and 4, PP 2 and 4): each stage's
decoder layers, weights, buffers (20 B of float32 an MLA layer the stage holds, as built) and
KV cache layers with their block sizes and pages; the model's groups and the common block
count every worker gets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.models import read_hf_config
from kvcore.models.geometry import ModelGeometry
from kvcore.sizing.pipeline import plan_stages
from kvcore.sizing.resolve import resolve_kv_cache_config
from kvcore.sizing.result import SizingResult
from tests.pp_stage_rows import assert_stage_is_vllms

DATA = Path(__file__).parent / "data" / "kimi_linear"
CASES = json.loads((DATA / "pp_answers.json").read_text())["cases"]
KEYS = [(n, k) for n, c in CASES.items() for k in c if k != "max_model_len"]
STAGES = [(n, k, s) for n, k in KEYS for s in range(len(CASES[n][k]["stages"]))]


def _geometry(name: str) -> ModelGeometry:
    return read_hf_config(json.loads((DATA / f"{name}.config.json").read_text()), name=name)


def _sized(name: str, key: str) -> SizingResult:
    tp, pp = int(key[2]), int(key.split("pp")[1])
    return resolve_kv_cache_config(geometry=_geometry(name), tensor_parallel_size=tp,
                                   pipeline_parallel_size=pp,
                                   max_model_len=CASES[name]["max_model_len"], gpu_memory_gib=4096)


def test_the_cases() -> None:
    assert sorted(CASES) == ["kimi-linear-48b-a3b", "tiny-kimi-linear"]
    assert len(STAGES) == 2 * 2 * (2 + 4)


@pytest.mark.parametrize(("name", "key", "stage"), STAGES)
def test_each_stages_layers_weights_and_buffers_are_vllms(name: str, key: str,
                                                          stage: int) -> None:
    assert_stage_is_vllms(_geometry(name), key, stage, CASES[name][key]["stages"][stage],
                          CASES[name]["max_model_len"])


def _no_mla_stage(name: str, key: str) -> bool:
    """vLLM aligns a stage's KDA block to the MLA layers' only where the stage holds one: the
    tiny config on 4 stages (its stages 0 and 2, KDA alone, keep block 16 and a 137,216 B page
    at TP 1), which kvcli does not model (its blocks agree, below)."""
    return any(all(s[0] != "MLAAttentionSpec" for s in st["specs"].values())
               for st in CASES[name][key]["stages"])


@pytest.mark.parametrize(("name", "key"), KEYS)
def test_each_stages_cache_layers_and_the_groups_are_vllms(name: str, key: str) -> None:
    res = _sized(name, key)
    plan = CASES[name][key]["planning"]
    if _no_mla_stage(name, key):
        assert (name, key) in {("tiny-kimi-linear", "tp1-pp4"), ("tiny-kimi-linear", "tp2-pp4")}
        return
    assert [(type(grp.kv_cache_spec).__name__, grp.kv_cache_spec.block_size,
             grp.kv_cache_spec.page_size_bytes, len(grp.layer_names))
            for grp in res.config.kv_cache_groups] == [
        (x["spec"], x["block_size"], x["page_size_bytes"], x["layers"])
        for x in plan["global_groups"]]
    for st, rec in zip(res.stages, CASES[name][key]["stages"], strict=True):
        ours = {f"model.{n}.self_attn": [type(grp.kv_cache_spec).__name__,
                                         grp.kv_cache_spec.block_size,
                                         grp.kv_cache_spec.page_size_bytes]
                for grp in st.groups for n in grp.layer_names}
        assert ours == rec["specs"]


@pytest.mark.parametrize(("name", "key"), KEYS)
def test_every_workers_block_count_is_vllms(name: str, key: str) -> None:
    """The same KV cache memory on every stage (256 MiB tiny, 20 GiB published): vLLM gives
    every worker the smallest stage's count (published at TP 4, PP 4: 18,204 blocks of 512)."""
    res = _sized(name, key)
    plan = CASES[name][key]["planning"]
    pp = int(key.split("pp")[1])
    stages = plan_stages(list(res.config.kv_cache_groups), res.geometry.num_layers, pp,
                         [0] * pp, plan["available"])
    assert {w["num_blocks"] for w in plan["workers"]} == {min(s.num_blocks for s in stages)}


def test_published_numbers() -> None:
    assert [CASES["kimi-linear-48b-a3b"][k]["planning"]["workers"][0]["num_blocks"]
            for k in ("tp1-pp2", "tp1-pp4", "tp4-pp2", "tp4-pp4")] == [2427, 4854, 9102, 18204]
