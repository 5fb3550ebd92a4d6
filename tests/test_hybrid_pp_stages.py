"""Mamba hybrids on pipeline stages against vLLM 0.33.0's own build of each stage and its
engine core's planning over them (tests/data/hybrid_pp_stages/answers.json,
record_hybrid_pp.py: the census's tiny 8-layer Jamba, Granite 4.0-H and Qwen3-Next on 2, 4
and 8 stages). A stage holding Mamba layers and no attention layer keeps them at the
configured block with an unpadded page (vLLM aligns a worker's block only where it finds an
attention backend), and the engine core's grouping keeps them apart from the aligned ones:
Jamba on 2 stages is 8 groups of one layer (Mamba 0-3 at block 16, attention 4 and Mamba 5-7
at 80) where one spec for every stage made 2 (`kvcore.sizing.stage_specs`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kvcore.models import read_hf_config
from kvcore.models.geometry import ModelGeometry
from kvcore.models.worker_specs import layer_specs
from kvcore.sizing.pipeline import plan_stages
from kvcore.sizing.resolve import resolve_kv_cache_config
from kvcore.sizing.result import SizingResult
from kvcore.sizing.stage_specs import stage_layer_names, stage_specs
from kvcore.specs import KVCacheSpec, MambaSpec

DATA = Path(__file__).parent / "data" / "hybrid_pp_stages"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
KEYS = [(n, k) for n, c in CASES.items() for k in c if k.startswith("pp")]


def _geometry(name: str) -> ModelGeometry:
    return read_hf_config(CASES[name]["config"], source="config.json")


def _pp(key: str) -> int:
    return int(key[2:].split("-")[0])


def _caching(key: str) -> bool:
    return not key.endswith("-none")


def _vllm_names(name: str, key: str) -> dict[int, str]:
    """vLLM's cache layer name by layer index (Jamba's `mixer` / `attn`, Granite's and
    Qwen3-Next's `self_attn.attn`, ...), as the recording names them."""
    return {int(re.search(r"layers\.(\d+)\.", n).group(1)): n  # type: ignore[union-attr]
            for st in CASES[name][key]["stages"] for n in st["specs"]}


def _row(spec: KVCacheSpec) -> list:
    out = [type(spec).__name__, spec.block_size, spec.page_size_bytes]
    if isinstance(spec, MambaSpec):
        out += [spec.page_size_padded, spec.num_prefill_checkpoint_blocks,
                spec.prefill_checkpoint_alignment]
    return out


def _sized(name: str, key: str) -> SizingResult:
    return resolve_kv_cache_config(geometry=_geometry(name), pipeline_parallel_size=_pp(key),
                                   max_model_len=CASES[name]["max_model_len"],
                                   enable_prefix_caching=_caching(key), gpu_memory_gib=4096)


def test_the_cases() -> None:
    assert sorted(CASES) == ["granite-4.0-h", "jamba", "qwen3-next"]
    assert len(KEYS) == 3 * 3 + 3


@pytest.mark.parametrize(("name", "key"), KEYS)
def test_each_stages_own_specs_are_vllms(name: str, key: str) -> None:
    """Each worker's specs before the engine core groups them: block, page, padding and the
    prefill checkpoint a stage's Mamba layers declare."""
    g, pp = _geometry(name), _pp(key)
    kw = {"max_model_len": CASES[name]["max_model_len"],
          "mamba_cache_mode": "align" if _caching(key) else "none"}
    specs = stage_specs(g, layer_specs(g, **kw), layer_specs(g, **kw, attention_free=True), pp,
                        layer_specs(g, **kw, gdn_prefill_checkpoint=False))
    vllm = _vllm_names(name, key)
    for names, rec in zip(stage_layer_names(g, list(specs), pp), CASES[name][key]["stages"],
                          strict=True):
        assert {vllm[int(n.split(".")[1])]: _row(specs[n]) for n in names} == rec["specs"]


@pytest.mark.parametrize(("name", "key"), KEYS)
def test_the_groups_are_vllms(name: str, key: str) -> None:
    """The global groups in vLLM's order (kind, block, page, layer count) and each worker's
    projection of them (its layers by name), and the one block count every worker gets."""
    res = _sized(name, key)
    plan = CASES[name][key]["planning"]
    assert [(type(grp.kv_cache_spec).__name__, grp.kv_cache_spec.block_size,
             grp.kv_cache_spec.page_size_bytes, len(grp.layer_names))
            for grp in res.config.kv_cache_groups] == [
        (x["spec"], x["block_size"], x["page_size_bytes"], x["layers"])
        for x in plan["global_groups"]]
    vllm = _vllm_names(name, key)
    for st, worker in zip(res.stages, plan["workers"], strict=True):
        assert [[type(grp.kv_cache_spec).__name__, grp.kv_cache_spec.block_size,
                 grp.kv_cache_spec.page_size_bytes,
                 [vllm[int(n.split(".")[1])] for n in grp.layer_names]]
                for grp in st.groups] == [
            [x["spec"], x["block_size"], x["page_size_bytes"], x["layers"]]
            for x in worker["groups"]]
    pp = _pp(key)
    stages = plan_stages(list(res.config.kv_cache_groups), res.geometry.num_layers, pp,
                         [0] * pp, plan["available"])
    assert {w["num_blocks"] for w in plan["workers"]} == {min(s.num_blocks for s in stages)}


def test_jamba_on_two_stages() -> None:
    """The numbers the README names: 8 groups of one layer, block 16 for stage 0's Mamba
    layers, 80 for stage 1's (attention 4, Mamba 5-7), every page 327,680 B; 3,276 blocks."""
    res = _sized("jamba", "pp2")
    assert [(grp.kv_cache_spec.block_size, grp.layer_names)
            for grp in res.config.kv_cache_groups] == [
        (16, ("layers.0",)), (16, ("layers.1",)), (16, ("layers.2",)), (16, ("layers.3",)),
        (80, ("layers.4",)), (80, ("layers.5",)), (80, ("layers.6",)), (80, ("layers.7",))]
    assert {grp.kv_cache_spec.page_size_bytes for grp in res.config.kv_cache_groups} == {327680}
    assert CASES["jamba"]["pp2"]["planning"]["workers"][0]["num_blocks"] == 3276


CUTS = json.loads((DATA / "answers.json").read_text())["cuts"]


@pytest.mark.parametrize("case_id", sorted(CUTS))
def test_a_hybrid_cut_to_mamba_layers_alone_on_one_stage(case_id: str) -> None:
    """vLLM's worker road on one stage (record_hybrid_pp.py --cuts): a hybrid class cut to
    Mamba layers alone (the size fuzz's s0-0288, Granite 4.0-H's 3 Mamba2 layers; s0-0028,
    Qwen3-Next's one GDN layer) aligns nothing either: block 16, pages unpadded, what
    `layer_specs(..., attention_free=True)` gives, and what kvcli builds at PP 1 with no
    keyword (the model's layers decide: ../size_fuzz re-recorded in the worker's order)."""
    cut = CUTS[case_id]
    g = read_hf_config(cut["config"], source="config.json")
    specs = layer_specs(g, max_model_len=cut["max_model_len"], attention_free=True)
    vllm = {int(re.search(r"layers\.(\d+)\.", n).group(1)): row  # type: ignore[union-attr]
            for n, row in cut["specs"].items()}
    assert {int(n.split(".")[1]): _row(s) for n, s in specs.items()} == vllm
    assert {row[1] for row in vllm.values()} == {16}
    assert {row[3] for row in vllm.values()} == {None}
    assert layer_specs(g, max_model_len=cut["max_model_len"]) == specs
    # (what kvcli built before 2026-12-08, aligning by the class: a worker with attention's)
    aligned = layer_specs(g, max_model_len=cut["max_model_len"], attention_free=False)
    assert {s.block_size for s in aligned.values()} == {272 if case_id == "s0-0288" else 320}


CUTS_NONE = json.loads((DATA / "answers.json").read_text())["cuts_none"]


@pytest.mark.parametrize(("case_id", "page"), [("s0-0288", 4_229_120), ("s0-0028", 536_576)])
def test_a_hybrid_cut_to_mamba_layers_without_prefix_caching(case_id: str, page: int) -> None:
    """The same two cuts with prefix caching off (record_hybrid_pp.py --cuts, `cuts_none`):
    the Mamba block max_model_len (2,048), the page unpadded, no GDN checkpoint; the cache
    config's block stays 16. kvcli at PP 1 in "none" mode, no keyword, builds the same."""
    cut = CUTS_NONE[case_id]
    assert (cut["block_size"], cut["mamba_block_size"]) == (16, 2048)
    g = read_hf_config(cut["config"], source="config.json")
    specs = layer_specs(g, max_model_len=cut["max_model_len"], mamba_cache_mode="none")
    vllm = {int(re.search(r"layers\.(\d+)\.", n).group(1)): row  # type: ignore[union-attr]
            for n, row in cut["specs"].items()}
    assert {int(n.split(".")[1]): _row(s) for n, s in specs.items()} == vllm
    assert {(row[1], row[2], row[3]) for row in vllm.values()} == {(2048, page, None)}


def test_a_model_replay_of_the_granite_cut_runs_at_block_16(tmp_path: Path) -> None:
    """`kvcli replay --model-config` sizes through the same road: s0-0288's one Mamba group at
    vLLM's block 16 (it ran at 272 before: 327 blocks), 344 unpadded blocks at 12 GiB (kvcli's
    count: its weights estimate is vLLM's 7,480,007,680 B here, ../data/size_fuzz)."""
    from typer.testing import CliRunner

    from kvcli.app import app
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CUTS["s0-0288"]["config"]))
    trace = Path(__file__).parents[1] / "traces" / "shared-prefix.jsonl"
    r = CliRunner().invoke(app, ["replay", str(trace), "--model-config", str(path),
                                 "--gpu-memory-gib", "12", "--json"])
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["groups"] == [{"type": "mamba", "block_size": 16, "sliding_window": None}]
    assert (out["block_size"], out["num_blocks"], out["finished"]) == (16, 344, 128)
