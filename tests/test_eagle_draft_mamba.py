"""An EAGLE draft's layers sized beside a Mamba hybrid's (`kvcore.sizing.resolve`).

vLLM 0.33's planning of these layers is recorded in tests/data/sizing_vllm/cases.json (the
cases named after the drafts in tests/data/sizing_vllm/drafts, configs made up for them) and
checked in test_sizing_vllm_answers.py; here the numbers `kvcli config` and a replay give, which
must be those cases' memory and block counts, and vLLM's start-up refusal of EAGLE-3 beside a
target class without auxiliary hidden states.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.models.eagle_draft import load_draft
from kvcore.models.presets import load_preset

DATA = Path(__file__).parent / "data" / "sizing_vllm"
DRAFTS = DATA / "drafts"
CASES = {c["name"]: c for c in json.loads((DATA / "cases.json").read_text())["cases"]}
TRACE = str(Path(__file__).resolve().parents[1] / "traces" / "multiturn-chat.jsonl")
QWEN = ["qwen3-next-80b-a3b", "--tp", "2", "--gpu-memory-gib", "141", "--max-model-len",
        "32768", "--spec-tokens", "2"]
DRAFT = str(DRAFTS / "qwen3-next-eagle3")


def test_the_made_up_qwen3_next_draft_weighs_what_its_modules_hold():
    d = load_draft(DRAFT, "eagle3", load_preset("qwen3-next-80b-a3b"))
    # qkv from 2 x 2,048 to 16 x 256 + 2 x 2 x 256; o; the MLP; the 32,000-row LM head
    assert d.split_params == 4096 * 5120 + 4096 * 2048 + 3 * 2048 * 6144 + 32000 * 2048
    # three norms, fc from 3 x 2,048 auxiliary hidden states, the final norm
    assert d.whole_params == 3 * 2048 + 6144 * 2048 + 2048
    assert d.weights_bytes(2) == 132_644_864 + 2 * 12_591_104 + 8 * 32000 == 158_083_072


@pytest.mark.parametrize("prefix, case, blocks, block_size", [
    ([], "align", 7725, 576), (["--no-enable-prefix-caching"], "none", 7945, 560)])
def test_config_puts_the_draft_layer_in_the_attention_group(prefix, case, blocks, block_size):
    r = CliRunner().invoke(app, ["config", *QWEN, *prefix, "--spec-method", "eagle3",
                                 "--spec-model", DRAFT, "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    recorded = CASES[f"qwen3-next-80b-a3b-tp2-qwen3-next-eagle3-{case}"]
    assert out["num_blocks"] == recorded["expected"]["num_blocks"] == blocks
    assert out["memory"]["available_kv_cache_bytes"] == recorded["available"] == 59_234_902_161
    page = 2 * block_size * 256 * 2             # the attention page: 1 KV head of 256 a worker
    assert out["bytes_per_block"] == 13 * page
    # 3 groups of 12 GDN layers, the 12 attention layers and the draft's at the attention
    # block: 13 layers a group, the GDN pages padded to the attention page
    assert [(g["kind"], g["num_layers"], g["block_size"], g["page_size_bytes"])
            for g in out["groups"]] == [
        ("mamba", 12, 32768 if case == "none" else block_size, page)] * 3 + [
        ("full", 13, block_size, page)]
    assert out["draft"]["layer_names"] == ["draft.layers.48"]
    assert out["draft"]["weights_bytes"] == 158_083_072


def test_replay_runs_with_the_draft_beside_the_gdn_layers():
    r = CliRunner().invoke(app, ["replay", TRACE, "--json", "--model", *QWEN,
                                 "--spec-method", "eagle3", "--spec-model", DRAFT,
                                 "--spec-acceptance-rate", "0.7"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert (out["num_blocks"], out["finished"]) == (7725, 294)


def test_eagle1_beside_jamba_is_sized_and_eagle3_refused_as_vllm_refuses():
    base = ["config", "jamba-v0.1", "--tp", "2", "--gpu-memory-gib", "80",
            "--max-model-len", "32768", "--spec-tokens", "2", "--json"]
    r = CliRunner().invoke(app, [*base, "--spec-method", "eagle", "--spec-model",
                                 str(DRAFTS / "jamba-eagle")])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["num_blocks"] == CASES[
        "jamba-v0.1-tp2-jamba-eagle-align"]["expected"]["num_blocks"] == 33080
    r = CliRunner().invoke(app, [*base, "--spec-method", "eagle3", "--spec-model",
                                 "eagle3-llama-3.1-8b"])
    assert r.exit_code == 2
    assert r.stderr.strip() == (
        "error: option --spec-method: eagle3 reads the target's auxiliary hidden states, which "
        "vLLM 0.33's class for jamba (jamba-v0.1) does not give (vLLM refuses to start: 'Model "
        "does not support EAGLE3 interface'); among Mamba hybrids Qwen3-Next, Qwen3.5 and "
        "Nemotron-H give them; eagle runs beside any")


# (the recorder's table: target, draft, method, tensor parallel, GiB)
RECORDED = [("qwen3-next-80b-a3b", "qwen3-next-eagle3", "eagle3", 2, 141),
            ("qwen3-next-80b-a3b", "qwen3-next-eagle3", "eagle3", 4, 80),
            ("qwen3-next-80b-a3b", "qwen3-next-eagle3-kv4", "eagle3", 2, 141),
            ("qwen3-next-80b-a3b", "qwen3-next-eagle3-kv4", "eagle3", 4, 80),
            ("nemotron-nano-9b-v2", "nemotron-nano-9b-v2-eagle3", "eagle3", 1, 80),
            ("jamba-v0.1", "jamba-eagle", "eagle", 2, 80),
            ("qwen3-next-80b-a3b", "eagle3-llama-3.1-8b", "eagle3", 2, 141)]


@pytest.mark.parametrize("mode", ["align", "none"])
@pytest.mark.parametrize("model, draft, method, tp, gib", RECORDED)
def test_the_sizing_plans_the_recorded_groups(model, draft, method, tp, gib, mode):
    """The whole sizing, from the model and the draft's config.json, gives vLLM's recorded
    groups and count: the draft's layers at the attention block the target's Mamba pages
    raised, a draft of another geometry in groups of its own (the kv4 drafts: 49 groups of
    one layer, at TP 4 its block doubled to the attention page; the Llama-3.1-8B draft's page
    twice the attention page: the target's attention blocks doubled, the GDN pages padded)."""
    from kvcore.sizing.resolve import resolve_kv_cache_config
    res = resolve_kv_cache_config(model, gpu_memory_gib=gib, tensor_parallel_size=tp,
                                  max_model_len=32768, enable_prefix_caching=mode == "align",
                                  draft=(draft if draft.startswith("eagle3-llama") else
                                         str(DRAFTS / draft), method),
                                  num_speculative_tokens=2)
    exp = CASES[f"{model}-tp{tp}-{draft}-{mode}"]
    assert res.available_bytes == exp["available"]
    assert res.config.num_blocks == exp["expected"]["num_blocks"]
    assert [(list(g.layer_names), g.kv_cache_spec.block_size, g.kv_cache_spec.page_size_bytes)
            for g in res.config.kv_cache_groups] == [
        (g["layers"], g["block_size"], g["page_size_bytes"]) for g in exp["expected"]["groups"]]
