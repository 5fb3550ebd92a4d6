"""A pipeline stage holding none of a MoE class's MoE layers, as vLLM 0.33 builds it or not
(tests/data/moe_stages: each class's tiny config, every stage built by vLLM on the meta
device, stage 0 first; its README says how). The classes that look for a MoE layer in the
stage raise on stage 0 (dense layers only, or no layer), and kvcli refuses in their words,
one line naming --pipeline-parallel-size, exit 2, from `kvcli config` and `kvcli replay`;
the classes that only warn build every stage, and kvcli sizes them, split as vLLM splits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.models import read_hf_config
from kvcore.models.geometry import ModelGeometry
from kvcore.models.moe_required import refuse_moe_free
from kvcore.models.moe_stages import NO_MOE_STAGE, moe_stage_refusal
from kvcore.models.tied_stages import TIED_HEAD_STAGE
from kvcore.sizing.pipeline import stage_ranges

DATA = Path(__file__).parent / "data" / "moe_stages"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
TIED = "ernie45-moe-tied"    # (its head's tie, not its MoE layers: `kvcore.models.tied_stages`)
REFUSED = sorted(n for n, c in CASES.items() if "refused" in c and n != TIED)
BUILT = sorted(n for n, c in CASES.items() if "refused" not in c)
# (kvcli refuses AXK1 by name: its own MLA, `kvcore.models.unsupported`)
SIZED = [n for n in BUILT if CASES[n]["architecture"] != "AXK1ForCausalLM"]
runner = CliRunner()


def _geometry(name: str) -> ModelGeometry:
    return read_hf_config(json.loads((DATA / f"{name}.config.json").read_text()),
                          source=f"{name}.config.json")


def _config(name: str) -> list[str]:
    return ["--model-config", str(DATA / f"{name}.config.json"), "--gpu-memory-gib", "80",
            "--pipeline-parallel-size", str(CASES[name]["pp"])]


def test_the_recorded_cases() -> None:
    assert len(REFUSED) == 17 and len(BUILT) == 8   # (and 2 of ../refused_lifted/pp)
    assert {CASES[n]["architecture"] for n in REFUSED} == set(NO_MOE_STAGE) - {
        "PanguProMoEV2ForCausalLM", "SarvamMLAForCausalLM"}   # (../refused_lifted/pp's)
    assert sorted(CASES[n]["architecture"] for n in BUILT) == [
        "AXK1ForCausalLM", "DeepseekV3ForCausalLM", "Ernie4_5_MoeForCausalLM",
        "Llama4ForCausalLM", "MixtralForCausalLM", "Qwen3MoeForCausalLM",
        "Qwen3_5MoeForCausalLM", "Qwen3_5MoeForConditionalGeneration"]


@pytest.mark.parametrize("name", REFUSED)
def test_a_stage_without_a_moe_layer_is_refused_in_vllms_words(name: str) -> None:
    case = CASES[name]
    assert case["stage_refused"] == 0
    words = NO_MOE_STAGE[case["architecture"]]
    # (Nemotron-H's bare assertion: its statement said)
    assert words == " ".join(case["refused"]) or (
        case["refused"] == ["AssertionError:"] and words.startswith("AssertionError: assert "))
    g = _geometry(name)
    stage0 = stage_ranges(g.num_layers, case["pp"])[0]
    assert not any(g.moe_layers[i] for i in stage0) and any(g.moe_layers)
    r = runner.invoke(app, ["config", *_config(name)])
    assert r.exit_code == 2
    assert r.stderr.strip() == (
        f"error: option --pipeline-parallel-size: {g.name} on {case['pp']} pipeline stages: "
        f"vLLM 0.33 refuses to build it: \"{words}\"")


@pytest.mark.parametrize("name", SIZED)
def test_a_class_that_builds_the_stage_is_sized_split_as_vllm(name: str) -> None:
    r = runner.invoke(app, ["config", *_config(name), "--json"])
    assert r.exit_code == 0, r.output
    stages = json.loads(r.stdout)["stages"]
    assert [[s["layers"][0], s["layers"][1] + 1] for s in stages] == [
        s["layers"] for s in CASES[name]["stages"]]
    assert [s["kv_layers"] for s in stages] == [s["kv_layers"] for s in CASES[name]["stages"]]
    assert all(s["num_blocks"] > 0 for s in stages)


def test_a_tied_ernie_moe_cannot_build_a_stage_before_the_last() -> None:
    case = CASES[TIED]
    assert (case["pp"], case["stage_refused"]) == (2, 0)
    words = " ".join(case["refused"])
    assert TIED_HEAD_STAGE[case["architecture"]] == words
    g = _geometry(TIED)
    assert g.tie_word_embeddings
    r = runner.invoke(app, ["config", *_config(TIED)])
    assert r.exit_code == 2
    assert r.stderr.strip() == (f"error: option --pipeline-parallel-size: {g.name} on 2 "
                                f"pipeline stages: vLLM 0.33 refuses to build it: \"{words}\"")
    assert runner.invoke(app, ["config", *_config(TIED)[:-1], "1"]).exit_code == 0


def test_the_replay_says_it_in_one_line(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"prompt_token_ids": [1, 2, 3], "output_length": 2}) + "\n")
    r = runner.invoke(app, ["replay", str(trace), *_config("glm4-moe-dense2")])
    assert r.exit_code == 2
    assert r.stderr.strip() == (
        "error: option --pipeline-parallel-size: glm4_moe on 4 pipeline stages: vLLM 0.33 "
        "refuses to build it: \"RuntimeError: No Glm4MoE layer found in model.layers.\"")


def test_more_stages_than_layers_gets_the_classes_words() -> None:
    # (vLLM builds a stage of no layer: Mixtral raises there, where kvcli said "fewer than
    # 4 stages"; a class that builds it keeps kvcli's refusal)
    assert _geometry("mixtral-2-layers").num_layers == 2
    assert "fewer than 9 stages" in runner.invoke(app, [
        "config", *_config("deepseek-v3-dense2")[:-1], "9"]).stderr


def test_the_qwen3_vl_moe_text_models_dense_layers() -> None:
    # (Qwen3-VL-MoE's decoder layer is Qwen3-MoE's: mlp_only_layers read; it was every layer)
    assert _geometry("qwen3-vl-moe-mlp-only").moe_layers == (False,) * 2 + (True,) * 6


def test_afmoe_with_no_moe_layer_and_param2moe_with_no_experts_build() -> None:
    g = _geometry("afmoe-dense2")
    dense = g.__class__(**{**{f: getattr(g, f) for f in g.__dataclass_fields__},
                           "moe_layers": (False,) * g.num_layers})
    assert moe_stage_refusal(dense, stage_ranges(8, 4)) is None     # (num_moe_layers 0)
    assert moe_stage_refusal(g, stage_ranges(8, 4)) is not None
    p = _geometry("param2moe-dense1")
    refuse_moe_free(p.__class__(**{**{f: getattr(p, f) for f in p.__dataclass_fields__},
                                   "moe_layers": (False,) * 4, "num_experts": 0}))


def test_the_whole_model_without_a_moe_layer_says_the_same_words(tmp_path: Path) -> None:
    # (the same code on one stage holding every layer: moe_required's refusal, now with
    # Qwen3-VL-MoE's words; AFMoE builds a model with no MoE layer)
    for name, key, words in (
            ("qwen3-vl-moe-mlp-only", "mlp_only_layers",
             "No Qwen3Moe layer found in the language_model."),
            ("afmoe-dense2", "num_dense_layers", None)):
        cfg = json.loads((DATA / f"{name}.config.json").read_text())
        (cfg.get("text_config") or cfg)[key] = list(range(8)) if "only" in key else 8
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(cfg))
        r = runner.invoke(app, ["config", "--model-config", str(path), "--gpu-memory-gib", "80"])
        assert r.exit_code == (2 if words else 0), r.output
        assert words is None or r.stderr.strip().endswith(f"vLLM refuses to build it: '{words}'")
