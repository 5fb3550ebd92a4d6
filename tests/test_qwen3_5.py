"""Qwen3.5 (dense and MoE, text-only and multimodal): its configs read, its weights (the vision
tower too), its Gated DeltaNet specs with Qwen3.5's float32 SSM state, the groups and hybrid
block size, and its MTP draft (`Qwen3_5MTP` / `Qwen3_5MoeMTP`). Checked against vLLM 0.33.0's
own modules and planning (tests/data/mtp_draft/qwen3_5_answers.json, recorded with
record_qwen3_5.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models.config_file import read_config_file
from kvcore.models.eagle_draft import draft_layer_specs
from kvcore.models.hf_config import read_hf_config
from kvcore.models.mtp_draft import mtp_draft
from kvcore.models.weights import estimate_params, estimate_weights_bytes
from kvcore.models.worker_specs import layer_specs
from kvcore.sizing import get_kv_cache_groups
from kvcore.specs import MambaSpec, SizingContext

DATA = Path(__file__).resolve().parent / "data" / "mtp_draft"
ANSWERS = json.loads((DATA / "qwen3_5_answers.json").read_text())["cases"]
TINY = ["9-tiny-qwen3-5", "10-tiny-qwen3-5-moe", "11-tiny-qwen3-5-vl", "12-tiny-qwen3-5-moe-vl"]
DEFAULTS = ["13-qwen3-5-text-defaults", "14-qwen3-5-moe-text-defaults", "15-qwen3-5-defaults",
            "16-qwen3-5-moe-defaults"]


def _config(case: str) -> str:
    return str(DATA / case / "target" / "config.json")


def _g(case: str):
    return read_config_file(_config(case))


@pytest.mark.parametrize("case, model_type, ssm, vision", [
    ("9-tiny-qwen3-5", "qwen3_5_text", "float32", 0),
    ("10-tiny-qwen3-5-moe", "qwen3_5_moe_text", "float32", 0),
    ("11-tiny-qwen3-5-vl", "qwen3_5_text", "float32", 93_152),
    ("12-tiny-qwen3-5-moe-vl", "qwen3_5_moe_text", "float32", 93_152),
    ("13-qwen3-5-text-defaults", "qwen3_5_text", None, 0),
    ("15-qwen3-5-defaults", "qwen3_5_text", None, 453_650_672),
    ("16-qwen3-5-moe-defaults", "qwen3_5_moe_text", None, 453_650_672)])
def test_both_nestings_read_as_vllm_builds_them(case, model_type, ssm, vision):
    """The text config under text_config or at the top; the SSM dtype vLLM's hook sets from
    mamba_ssm_dtype; the vision tower's parameters only for the multimodal classes (vLLM's
    `visual`, counted on meta)."""
    g = _g(case)
    rec = ANSWERS[f"{case}/K=0"]
    assert (g.model_type, g.mamba.ssm_dtype, g.vision_params) == (model_type, ssm, vision)
    assert rec["target"]["param_numel_by_top_module"].get("visual", 0) == vision
    assert rec["mamba_ssm_cache_dtype"] == (ssm or "auto")
    # a MoE model has experts on every layer, a dense one on none
    assert g.moe_layers == (("moe" in model_type),) * g.num_layers


@pytest.mark.parametrize("case", DEFAULTS)
def test_the_parameters_are_vllms_to_the_one(case):
    """The class defaults (vocabularies a multiple of 64): vLLM's count and bytes exactly (the
    GDN layers' A_log in float32: e.g. 18,814,906,336 B of bfloat16 + 3,072 B for Qwen3_5Config)."""
    rec = ANSWERS[f"{case}/K=0"]["target"]
    g = _g(case)
    assert estimate_params(g) == (rec["param_numel"], 0)
    by = rec["param_bytes_by_dtype"]
    assert estimate_weights_bytes(g) == by["bfloat16"] + by["float32"]


@pytest.mark.parametrize("case, tied", [(TINY[0], True), (TINY[1], False), (TINY[2], True),
                                        (TINY[3], False)])
def test_tiny_parameters_count_the_padded_vocabulary(case, tied):
    """vLLM pads the 1,000-row vocabulary to 1,024, and so does kvcli: 24 x 64 more a matrix
    than the config's rows. Case 12's wrapper ties, its text config does not: vLLM (and kvcli)
    read the text's."""
    g = _g(case)
    assert g.tie_word_embeddings is tied
    padded = estimate_params(g)[0]
    assert padded == ANSWERS[f"{case}/K=0"]["target"]["param_numel"]
    assert padded - estimate_params(replace(g, vocab_size=1024))[0] == 0


@pytest.mark.parametrize("case", TINY + DEFAULTS)
def test_the_mtp_module_vllm_keeps(case):
    """fc (2H -> H), three norms and a full-attention decoder layer (dense MLP or sparse MoE as
    the target's); embedding and LM head the target's: 486,581,248 B for the dense defaults,
    1,689,281,536 for the MoE ones."""
    kept = ANSWERS[f"{case}/K=1"]["after_load_sharing"]["param_bytes_by_dtype_not_the_targets"]
    d = mtp_draft(_g(case))
    arch = "Qwen3_5MoeMTP" if "moe" in case else "Qwen3_5MTP"
    assert ANSWERS[f"{case}/K=1"]["draft"]["class"] == arch
    assert (d.architecture, {"bfloat16": d.weights_bytes()}) == (arch, kept)


def _vllm_name(name: str, g, multimodal: bool) -> str:
    i = int(name.rsplit(".", 1)[1])
    if name.startswith("draft."):
        return f"mtp.layers.{i - g.num_layers}.self_attn.attn"
    kind = "linear_attn" if g.layer_kinds[i] == "mamba" else "self_attn.attn"
    return ("language_model." if multimodal else "") + f"model.layers.{i}.{kind}"


@pytest.mark.parametrize("case", TINY + DEFAULTS)
@pytest.mark.parametrize("k", [0, 1, 3])
def test_the_groups_and_specs_vllm_plans(case, k):
    """Hybrid block 64 (tiny), 320 (dense defaults: 32 layers grouped by 8), 576 (MoE defaults:
    40 by 10); the GDN state (conv in bf16, SSM in mamba_ssm_dtype) with K more conv rows and
    K speculative blocks; the draft's layer joins the full-attention group."""
    rec = ANSWERS[f"{case}/K={k}"]
    g = _g(case)
    specs = layer_specs(g, max_model_len=4096, num_speculative_tokens=k)
    block = rec["cache"]["block_size"]
    if k:
        specs.update(draft_layer_specs(mtp_draft(g), g, block_size=block, max_model_len=4096))
    groups = get_kv_cache_groups(specs)
    mm = case in (TINY[2], TINY[3], DEFAULTS[2], DEFAULTS[3])
    assert [[_vllm_name(x, g, mm) for x in grp.layer_names] for grp in groups] == [
        grp["layers"] for grp in rec["kv_cache_groups"]]
    assert [(grp.kv_cache_spec.block_size, grp.kv_cache_spec.page_size_bytes)
            for grp in groups] == [(grp["block_size"], grp["page_size_bytes"])
                                   for grp in rec["kv_cache_groups"]]
    gdn = next(s for s in specs.values() if isinstance(s, MambaSpec))
    vllm_gdn = next(s["spec"] for s in rec.get("kv_specs_target", rec.get("kv_specs", []))
                    if s["spec"]["type"] == "MambaSpec")
    assert (str(tuple(gdn.shapes)), f"(torch.{gdn.dtypes[0]}, torch.{gdn.dtypes[1]})",
            gdn.page_size_bytes, gdn.page_size_padded) == (
        vllm_gdn["shapes"], vllm_gdn["dtypes"], vllm_gdn["page_size_bytes"],
        vllm_gdn["page_size_padded"])
    assert [gdn.max_memory_usage_bytes(SizingContext(max_model_len=4096))
            // gdn.page_size_bytes] == rec["mamba_max_memory_usage_pages"] == [3 + k]


def test_the_float32_ssm_state_is_the_page():
    """Tiny GDN layer: conv (3, 128) bf16 = 768 B + SSM (4, 16, 16) float32 = 4,096 B; in bf16 it
    were 2,048: the state dtype vLLM's hook sets is what a page holds (before padding)."""
    gdn = next(s for s in layer_specs(_g(TINY[0]), max_model_len=4096).values()
               if isinstance(s, MambaSpec))
    assert gdn.dtypes == ("bfloat16", "float32")
    assert gdn.real_page_size_bytes == 768 + 4_096


def test_wrapper_without_text_config_is_refused():
    with pytest.raises(InputError, match="without 'text_config'") as e:
        read_hf_config({"architectures": ["Qwen3_5ForConditionalGeneration"],
                        "model_type": "qwen3_5", "hidden_size": 64}, source="q.json")
    assert (e.value.path, e.value.field) == ("q.json", "text_config")


def test_a_bad_ssm_dtype_names_the_field(tmp_path):
    cfg = json.loads(Path(_config(TINY[0])).read_text())
    cfg["mamba_ssm_dtype"] = "fp8"
    p = tmp_path / "q35.json"
    p.write_text(json.dumps(cfg))
    r = CliRunner().invoke(app, ["config", "--model-config", str(p)])
    assert r.exit_code == 2
    assert "mamba_ssm_dtype" in r.stderr and "fp8" in r.stderr and "Traceback" not in r.output
    assert r.stdout == ""


@pytest.mark.parametrize("n, match", [(2, "has 2 MTP modules \\(mtp_num_hidden_layers\\)"),
                                      (0, "has no MTP module \\(mtp_num_hidden_layers 0\\)")])
def test_other_module_counts_are_refused(n, match):
    cfg = json.loads(Path(_config(TINY[1])).read_text())
    cfg["mtp_num_hidden_layers"] = n
    with pytest.raises(InputError, match=match):
        mtp_draft(read_hf_config(cfg))


def test_kvcli_config_on_the_default_multimodal_config():
    """Qwen3_5Config() on 80 GiB at 32,768 tokens: no longer refused; MTP x 2 adds the draft's
    layer to the full-attention group (9 of 8) and a GDN block a request per token."""
    base = ["config", "--model-config", _config(DEFAULTS[2]), "--gpu-memory-gib", "80",
            "--max-model-len", "32768", "--json"]
    r = CliRunner().invoke(app, base)
    assert r.exit_code == 0, r.output
    plain = json.loads(r.stdout)
    r = CliRunner().invoke(app, [*base, "--spec-method", "mtp", "--spec-tokens", "2"])
    assert r.exit_code == 0, r.output
    mtp = json.loads(r.stdout)
    assert plain["bytes_per_block"] == 8 * 1_310_720
    assert mtp["bytes_per_block"] == 9 * 1_310_720
    assert [(x["kind"], x["num_layers"]) for x in mtp["groups"]] == [("mamba", 8)] * 3 + [
        ("full", 9)]
    assert mtp["draft"]["architecture"] == "Qwen3_5MTP"
