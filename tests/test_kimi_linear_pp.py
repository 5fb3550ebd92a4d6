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

from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay
from kvcore.models import read_hf_config
from kvcore.models.geometry import ModelGeometry
from kvcore.models.worker_specs import layer_specs
from kvcore.sizing.pipeline import plan_stages
from kvcore.sizing.resolve import resolve_kv_cache_config
from kvcore.sizing.result import SizingResult
from kvcore.sizing.stage_specs import stage_layer_names, stage_specs
from kvcore.specs import KVCacheSpec
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


def _vllm_name(name: str) -> str:
    return f"model.{name}.self_attn"


def _row(spec: KVCacheSpec) -> list:
    return [type(spec).__name__, spec.block_size, spec.page_size_bytes]


@pytest.mark.parametrize(("name", "key"), KEYS)
def test_each_stages_own_specs_are_vllms(name: str, key: str) -> None:
    """What each stage's worker builds before the engine core groups them: a stage holding no
    MLA layer (tiny on 4 stages: stages 0 and 2) keeps its KDA layers at block 16 with an
    unpadded page (137,216 B at TP 1, 68,608 at TP 2), vLLM aligning a stage's block only
    where it finds an attention backend (`kvcore.sizing.stage_specs`)."""
    tp, pp = int(key[2]), int(key.split("pp")[1])
    g, mml = _geometry(name), CASES[name]["max_model_len"]
    kw = {"tp": tp, "max_model_len": mml, "mamba_cache_mode": "align"}
    specs = stage_specs(g, layer_specs(g, **kw), layer_specs(g, **kw, attention_free=True), pp)
    for names, rec in zip(stage_layer_names(g, list(specs), pp), CASES[name][key]["stages"],
                          strict=True):
        assert {_vllm_name(n): _row(specs[n]) for n in names} == rec["specs"]


@pytest.mark.parametrize(("name", "key"), KEYS)
def test_the_groups_are_vllms(name: str, key: str) -> None:
    """The engine core's groups over the stages' specs merged, in vLLM's order, and each
    worker's projection of them: tiny on 4 stages is 6 groups of one layer (KDA 0, 3, 4 at
    block 16 padded to 147,456 B, KDA 1 at 512, MLA 2, MLA 5), the others the KDA layers in
    groups as wide as the MLA layers' count, then the MLA layers."""
    res = _sized(name, key)
    plan = CASES[name][key]["planning"]
    assert [(type(grp.kv_cache_spec).__name__, grp.kv_cache_spec.block_size,
             grp.kv_cache_spec.page_size_bytes, len(grp.layer_names))
            for grp in res.config.kv_cache_groups] == [
        (x["spec"], x["block_size"], x["page_size_bytes"], x["layers"])
        for x in plan["global_groups"]]
    for st, worker in zip(res.stages, plan["workers"], strict=True):
        assert [[*_row(grp.kv_cache_spec), [_vllm_name(n) for n in grp.layer_names]]
                for grp in st.groups] == [
            [x["spec"], x["block_size"], x["page_size_bytes"], x["layers"]]
            for x in worker["groups"]]


def test_a_stage_without_mla_makes_six_groups() -> None:
    """The numbers the paragraph in tests/data/kimi_linear/README.md names, kvcli's."""
    groups = _sized("tiny-kimi-linear", "tp1-pp4").config.kv_cache_groups
    assert [(grp.kv_cache_spec.block_size, grp.layer_names) for grp in groups] == [
        (16, ("layers.0",)), (16, ("layers.3",)), (16, ("layers.4",)), (512, ("layers.1",)),
        (512, ("layers.2",)), (512, ("layers.5",))]
    assert {grp.kv_cache_spec.page_size_bytes for grp in groups} == {147456}


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


def test_a_replay_on_four_stages_runs_over_vllms_groups(tmp_path: Path) -> None:
    """`kvcli replay --model-config tiny --pipeline-parallel-size 4` plans vLLM's 6 groups and
    its scheduler runs over them (step for step against vLLM on such groups:
    tests/test_replay_pp_mamba_stages_cases.py)."""
    trace = tmp_path / "t.jsonl"
    lines = (Path(__file__).parents[1] / "traces" / "shared-prefix.jsonl").read_text()
    trace.write_text("\n".join(lines.splitlines()[:6]) + "\n")
    s = replay(str(trace), ReplayOptions(model_config=str(DATA / "tiny-kimi-linear.config.json"),
                                         pipeline_parallel_size=4, num_blocks=200,
                                         max_model_len=4096))
    assert [(g["type"], g["block_size"]) for g in s.groups] == [
        ("mamba", 16), ("mamba", 16), ("mamba", 16), ("mamba", 512), ("mla", 512),
        ("mla", 512)]
    assert s.finished == 6
