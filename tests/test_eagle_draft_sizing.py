"""An EAGLE draft's layers and weights in the pool sized from a model (`kvcore.models.eagle_draft`).

vLLM's planning of a target's layers with its draft's (marked is_draft) is checked in
test_sizing_vllm_answers.py (three recorded cases; beside Mamba hybrids fourteen more,
test_eagle_draft_mamba.py); here the draft's parameter count, the
numbers a replay and `kvcli config` get from it, and the refusals.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models.config_file import read_config_file
from kvcore.models.eagle_draft import draft_layer_specs, load_draft
from kvcore.models.presets import load_preset
from kvcore.sizing.resolve import resolve_kv_cache_config

TRACE = str(Path(__file__).resolve().parents[1] / "traces" / "shared-prefix.jsonl")
TINY = str(Path(__file__).parent / "data" / "sched_spec_eagle" / "eagle-draft")
EAGLE3 = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
LLAMA = load_preset("llama-3.1-8b")
SPEC = ["--spec-tokens", "3", "--spec-acceptance-rate", "0.7"]


def test_eagle3_llama_draft_parameters_as_vllm_builds_them():
    d = load_draft(EAGLE3, "eagle3", LLAMA)
    assert (d.architecture, d.geometry.num_layers, d.geometry.dtype) == (
        "Eagle3LlamaForCausalLM", 1, "bfloat16")        # the target's dtype, not float16
    # qkv from 2 x 4,096 (embedding and hidden state) to 4,096 + 2 x 1,024; o; the MLP; the
    # LM head over the 32,000-token draft vocabulary
    assert d.split_params == 8192 * 6144 + 4096 * 4096 + 3 * 4096 * 14336 + 32000 * 4096
    # three norms in the layer, fc from 3 x 4,096 auxiliary hidden states, the final norm
    assert d.whole_params == 3 * 4096 + 12288 * 4096 + 4096
    assert d.split_params + d.whole_params == 424_689_664      # (the checkpoint: ~850 MB fp16)
    assert d.id_map_entries == 32000
    assert d.weights_bytes() == 2 * 424_689_664 + 8 * 32000
    assert d.weights_bytes(2) == 2 * 374_341_632 // 2 + 2 * 50_348_032 + 8 * 32000


def test_eagle1_draft_shares_the_target_head_and_has_no_first_input_norm():
    d = load_draft(TINY, "eagle", LLAMA)
    assert d.architecture == "EagleLlamaForCausalLM"
    assert d.split_params == 64 * (64 + 2 * 64) + 64 * 64 + 3 * 64 * 128
    assert (d.whole_params, d.id_map_entries) == (64 + 2 * 64 * 64, 0)


def test_the_pool_loses_the_draft_weights_and_a_block_costs_33_layers():
    base = resolve_kv_cache_config("llama-3.1-8b", gpu_memory_gib=24, max_model_len=8192)
    res = resolve_kv_cache_config("llama-3.1-8b", gpu_memory_gib=24, max_model_len=8192,
                                  draft=(EAGLE3, "eagle3"))
    assert (base.config.num_blocks, base.bytes_per_block) == (3630, 32 * 65536)
    assert base.buffers_bytes == 131072 * 128 * 2 + 32 * 16
    assert res.draft_weights_bytes == 849_635_328
    assert res.weights_bytes == base.weights_bytes + 849_635_328
    # the draft's buffers: its layer's scales and its own RoPE cache (base 10,000, no
    # scaling), its 2,048 positions raised to the target's max_model_len as vLLM raises them
    assert res.buffers_bytes == base.buffers_bytes + 16 + 8192 * 128 * 2
    # (6,798,061,649: the memory tests/data/sizing_vllm's eagle3 case was planned on)
    assert res.available_bytes == 6_798_061_649 - res.buffers_bytes == 6_762_409_537
    assert (res.config.num_blocks, res.bytes_per_block) == (3126, 33 * 65536)
    [group] = res.config.kv_cache_groups
    assert group.layer_names[-2:] == ("layers.31", "draft.layers.32")
    # a weights figure given is vLLM's "Model loading took": the draft's is in it
    given = resolve_kv_cache_config("llama-3.1-8b", gpu_memory_gib=24, max_model_len=8192,
                                    weights_gib=16, draft=(EAGLE3, "eagle3"))
    assert (given.weights_bytes, given.buffers_bytes) == (16 << 30, 0)


def test_replay_sizes_the_pool_with_the_draft():
    base = ["replay", TRACE, "--json", "--model", "llama-3.1-8b", "--gpu-memory-gib", "24",
            "--max-model-len", "8192", *SPEC, "--spec-method", "eagle3"]
    r = CliRunner().invoke(app, [*base, "--spec-model", EAGLE3])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert (out["num_blocks"], out["config"]["spec_model"]) == (3126, EAGLE3)
    sc = json.dumps({"method": "eagle3", "num_speculative_tokens": 3, "model": TINY})
    r = CliRunner().invoke(app, [*base[:-6], "--spec-acceptance-rate", "0.7", "-sc", sc])
    assert r.exit_code == 0, r.output
    # (1 layer of 4 heads x 16: a uniform-type group; the scheduler runs its first spec; its
    # RoPE cache, 1,048,576 positions x 16 x 2 B, 16 blocks of the pool)
    assert json.loads(r.stdout)["num_blocks"] == 3605
    r = CliRunner().invoke(app, base)
    assert r.exit_code == 2
    assert "needs its draft model to size it with: spec_model" in r.stderr


def test_config_shows_the_draft():
    r = CliRunner().invoke(app, ["config", "llama-3.1-8b", "--gpu-memory-gib", "24",
                                 "--max-model-len", "8192", "--spec-method", "eagle3",
                                 "--spec-model", "eagle3-llama-3.1-8b", "--spec-tokens", "3",
                                 "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["num_blocks"] == 3126 and out["groups"][0]["num_layers"] == 33
    assert out["draft"] == {
        "model": "eagle3-llama-3.1-8b", "method": "eagle3",
        "architecture": "Eagle3LlamaForCausalLM",
        "source": "draft preset eagle3-llama-3.1-8b (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B)",
        "layers": 1, "num_kv_heads": 8, "head_dim": 128, "layer_names": ["draft.layers.32"],
        "weights_bytes": 849_635_328, "weights_gib": 849_635_328 / (1 << 30),
        "max_model_len_lowered_from": None}
    r = CliRunner().invoke(app, ["config", "llama-3.1-8b", "--gpu-memory-gib", "24", "--json",
                                 "--max-model-len", "8192", "-sc",
                                 '{"method": "ngram", "num_speculative_tokens": 3}'])
    assert json.loads(r.stdout)["num_blocks"] == 3630      # n-gram: no layers, no weights
    r = CliRunner().invoke(app, ["config", "llama-3.1-8b", "--gpu-memory-gib", "24",
                                 "--spec-method", "eagle", "--spec-tokens", "3"])
    assert r.exit_code == 2 and "option --spec-model: eagle needs its draft model" in r.stderr


@pytest.mark.parametrize("cfg, message", [
    ({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"},
     "is 'Eagle3Qwen3ForCausalLM' for eagle3, which kvcli does not size"),
    ({"attention_chunk_size": 128, "layer_types": ["chunked_attention"]},
     "kvcli sizes dense full-attention and sliding-window drafts only"),
])
def test_drafts_kvcli_does_not_size_are_refused(tmp_path, cfg, message):
    base = json.loads((Path(TINY) / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**base, **cfg}))
    with pytest.raises(InputError) as err:
        load_draft(str(tmp_path), "eagle3", LLAMA)
    assert message in err.value.message and err.value.field == "spec_model"


def test_an_unknown_draft_is_one_line():
    r = CliRunner().invoke(app, ["replay", TRACE, "--model", "llama-3.1-8b", "--gpu-memory-gib",
                                 "24", *SPEC, "--spec-method", "eagle3", "--spec-model",
                                 "no/such-draft"])
    assert r.exit_code == 2
    assert r.stderr.strip() == (
        "error: option --spec-model: draft model 'no/such-draft' is neither a config.json (or a "
        "folder holding one) nor a draft kvcli knows: eagle3-llama-3.1-8b "
        "(yuhuili/EAGLE3-LLaMA3.1-Instruct-8B)")


ANSWERS = json.loads((Path(__file__).parent / "data" / "eagle_draft" / "answers.json")
                     .read_text())["cases"]


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_the_draft_as_vllm_built_it(name):
    """tests/data/eagle_draft: vLLM 0.33's own draft modules (its V2 runner's load path on the
    meta device): the parameters it keeps once the embedding (and EAGLE-1's LM head) are the
    target's, and the draft layers' specs and group."""
    case = ANSWERS[name]
    folder = Path(__file__).parent / "data" / "eagle_draft" / name
    target = read_config_file(str(folder / "target" / "config.json"))
    d = load_draft(str(folder / "draft"), case["method"], target)
    numel = case["params"]["numel_by_group"]
    # (the layers' count holds each attention layer's 4 float32 scale scalars, kept out)
    own = (numel["model.layers"] - 4 * d.geometry.num_layers + numel["model.fc"]
           + numel.get("model.norm", 0) + numel.get("lm_head", 0))
    assert (d.architecture, d.split_params + d.whole_params) == (case["draft"]["class"], own)
    assert d.id_map_entries == numel.get("draft_id_to_target_id", 0)
    assert d.geometry.dtype == case["draft"]["dtype"] == target.dtype
    specs = draft_layer_specs(d, target, max_model_len=case["draft"]["max_model_len"])
    assert [(s.num_kv_heads, s.head_size, s.page_size_bytes) for s in specs.values()] == [
        (v["num_kv_heads"], v["head_size"], v["page_size_bytes"])
        for v in case["kv_specs"].values()]
    assert [n.split(".")[-1] for n in specs] == [
        n.split(".")[2] for n in case["kv_specs"]]          # named after the target's layers
    [group] = case["kv_cache_groups"]
    res = resolve_kv_cache_config(geometry=target, num_blocks=100, max_model_len=16,
                                  draft=(str(folder / "draft"), case["method"]))
    assert [len(g.layer_names) for g in res.config.kv_cache_groups] == [group["num_layers"]]


def test_a_draft_of_another_block_size_beside_a_hybrid_model_replays():
    """gpt-oss's layers at 32-token blocks, Llama's EAGLE-3 draft at 16 (the same page: vLLM's
    planning, recorded): EAGLE over groups of different block sizes runs as vLLM's scheduler
    does (tests/data/sched_spec_eagle_mixed/), hashed at 16 tokens."""
    r = CliRunner().invoke(app, ["replay", TRACE, "--model", "gpt-oss-20b", "--gpu-memory-gib",
                                 "80", *SPEC, "--spec-method", "eagle3", "--spec-model", EAGLE3,
                                 "--json"])
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert sorted({g["block_size"] for g in out["groups"]}) == [16, 32]
    assert (out["finished"], out["hit_tokens"]) == (128, 111_104)
