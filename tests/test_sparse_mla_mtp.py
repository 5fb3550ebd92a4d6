"""Method mtp on DeepSeek-V3.2 and GLM-5 against vLLM 0.33.0's own MTP module
(tests/data/sparse_mla/mtp_answers.json, record_sparse_mtp.py there): DeepSeek's module whose
decoder layer keeps an indexer (vLLM builds one in every MTP layer), its two caches joining the
target's one group; before, kvcli refused method mtp for both model types."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.models.config_file import read_config_file
from kvcore.models.mtp_draft import mtp_draft

DATA = Path(__file__).resolve().parent / "data"
ANSWERS = json.loads((DATA / "sparse_mla" / "mtp_answers.json").read_text())["cases"]
CONFIGS = {"deepseek-v3.2": DATA / "sparse_mla" / "deepseek-v3.2.config.json",
           "glm-5": DATA / "sparse_mla" / "glm-5.config.json",
           "deepseek-v3.2-tiny": DATA / "sched_sparse_mla" / "deepseek-v3.2-tiny.json",
           # (IndexCache targets: the module's layer keeps its indexer, vLLM's is_mtp_layer)
           "deepseek-v3.2-index-freq": DATA / "sparse_mla" / "deepseek-v3.2-index-freq.config.json",
           "glm-5-index-pattern": DATA / "sparse_mla" / "glm-5-index-pattern.config.json"}


@pytest.mark.parametrize("case", sorted(CONFIGS))
def test_the_module_and_its_group_as_vllms(case: str) -> None:
    rec = ANSWERS[case]
    d = mtp_draft(read_config_file(str(CONFIGS[case])))
    own = rec["after_load_sharing"]["param_bytes_by_dtype_not_the_targets"]
    assert d.weights_bytes() == sum(own.values())
    r = CliRunner().invoke(app, ["config", "--model-config", str(CONFIGS[case]),
                                 "--gpu-memory-gib", "2000", "--max-model-len", "4096",
                                 "--spec-method", "mtp", "--spec-tokens", "1", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    (group,) = rec["kv_cache_groups"]
    assert (out["bytes_per_block"], [g["num_layers"] for g in out["groups"]]) == (
        group["spec"]["page_size_bytes"], [group["num_layers"]])
    # (one MTP layer: its latent and indexer caches, vLLM's layer N's two)
    n = len(ANSWERS[case]["kv_specs"])
    assert n == 2 and len(out["draft"]["layer_names"]) == n


def test_the_recorded_pages() -> None:
    """DeepSeek-V3.2 with its MTP layer: 62 layers of 82,176 bytes a block of 64."""
    g = ANSWERS["deepseek-v3.2"]["kv_cache_groups"][0]
    assert (g["num_layers"], g["spec"]["page_size_bytes"]) == (124, 62 * 82_176)
    assert ANSWERS["deepseek-v3.2"]["draft"]["architectures"] == ["DeepseekV32MTPModel"]


GLM_LITE = json.loads((DATA / "sparse_mla" / "glm_lite_mtp_answers.json").read_text())


def test_glm_4_7_flash_mtp_as_vllms() -> None:
    """GLM-4.7-Flash's Glm4MoeLiteMTP (kvcli refused it as not modelled): DeepSeek's module
    shape, its layer 47 a Glm4MoeLiteDecoderLayer as the target's last (MoE, GLM-4.5's float32
    router and bias), 1,287,150,080 bytes bf16 and 524,544 float32 of its own; its latent cache
    joins the target's group at block 16 (48 layers, 884,736 bytes a block)."""
    rec = GLM_LITE["cases"]["glm-4.7-flash"]
    cfg = DATA / "mla" / "glm-4.7-flash.config.json"
    d = mtp_draft(read_config_file(str(cfg)))
    own = rec["after_load_sharing"]["param_bytes_by_dtype_not_the_targets"]
    assert (d.weights_bytes(), own) == (1_287_674_624, {"bfloat16": 1_287_150_080,
                                                         "float32": 524_544})
    assert rec["draft"]["architectures"] == ["Glm4MoeLiteMTPModel"]
    r = CliRunner().invoke(app, ["config", "--model-config", str(cfg), "--gpu-memory-gib", "80",
                                 "--max-model-len", "4096", "--spec-method", "mtp",
                                 "--spec-tokens", "1", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    (group,) = rec["kv_cache_groups"]
    assert (out["bytes_per_block"], [(g["num_layers"], g["block_size"]) for g in out["groups"]]) \
        == (group["spec"]["page_size_bytes"] * group["num_layers"], [(48, 16)])
    assert list(rec["kv_specs"]) == ["model.layers.47.self_attn.attn"]


def test_the_mtp_modules_top_k_scratch_is_counted_beside_the_targets() -> None:
    # (each DeepSeek-V3.2 MTP module allocates its own topk_indices_buffer, 2,048 x 2,048
    # int32, as the target's model does: 41,943,120 B of buffers, 122,244 blocks at 80 GiB
    # before)
    name = str(Path(__file__).resolve().parent / "data" / "weights_census" / "quant2"
               / "deepseek-v3.2-l4-fp8.config.json")
    r = CliRunner().invoke(app, ["config", "--model-config", name, "--gpu-memory-gib", "80",
                                 "--spec-method", "mtp", "--spec-tokens", "1", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["num_blocks"] == 122_162
    assert out["memory"]["buffers_bytes"] == 41_943_120 + 2 * 2048 * 2048 * 4
