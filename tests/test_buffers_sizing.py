"""The buffers term of the KV memory (`kvcore.sizing.buffers_term`): what vLLM 0.33's classes
keep beside the weights, subtracted with them, per rank and per pipeline stage; a draft's own,
its RoPE cache raised to the target's max_model_len as vLLM raises it, against vLLM's draft
classes (tests/data/weights_census/drafts_answers.json, built at max_model_len 4,096)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.models.eagle_draft import load_draft
from kvcore.models.hf_config import read_hf_config
from kvcore.models.presets import load_preset
from kvcore.sizing.buffers_term import buffer_bytes, draft_buffer_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import built_ranks
from tests.test_draft_census import CASES, _draft

DATA = Path(__file__).parent / "data"
LLAMA = 131072 * 128 * 2 + 32 * 16          # Llama-3.1-8B's RoPE cache and 32 layers' scales
BUDGET = int(80 * (1 << 30) * 0.92)


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES))
def test_a_drafts_buffers_equal_vllms(name: str, tp: int, rank: int) -> None:
    """EAGLE drafts: 16 B of scales a layer and their own RoPE cache (2,048 positions raised to
    4,096: 1,048,576 B, 524,288 at head dim 64); an MTP module: 16 B, the target's cache."""
    case = CASES[name]
    target = read_hf_config(json.loads((DATA / case["target"] / "config.json").read_text()))
    rec = case["tp"][str(tp)][rank]["buffer_bytes_by_dtype"]
    assert draft_buffer_bytes(_draft(name), target, 4096) == sum(
        b for by_dtype in rec.values() for b in by_dtype.values())


def test_llama_8b_loses_16_blocks_and_weights_gib_holds_the_buffers() -> None:
    res = resolve_kv_cache_config("llama-3.1-8b", gpu_memory_gib=80)
    assert res.buffers_bytes == LLAMA == 33_554_944
    assert res.available_bytes == BUDGET - 16_060_522_496 - LLAMA
    assert res.config.num_blocks == 30_008                  # 30,024 without the buffers
    given = resolve_kv_cache_config("llama-3.1-8b", gpu_memory_gib=80, weights_gib=15)
    assert (given.buffers_bytes, given.available_bytes) == (0, BUDGET - 15 * (1 << 30))


@pytest.mark.parametrize(("mml", "own"), [
    (131072, 131072 * 128 * 2),      # raised to the target's max_model_len
    (8192, 8192 * 128 * 2),
    (1024, 2048 * 128 * 2)])         # never lowered: its own 2,048 positions
def test_the_eagle3_drafts_rope_cache_follows_max_model_len(mml: int, own: int) -> None:
    g = load_preset("llama-3.1-8b")
    d = load_draft("eagle3-llama-3.1-8b", "eagle3", g)
    assert buffer_bytes(g, 1, d, mml) == LLAMA + 16 + own


def _custom_draft(tmp_path: Path, **keys) -> str:
    cfg = json.loads((DATA / "eagle_draft/1-llama31-8b-eagle3/draft/config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**cfg, **keys}))
    return str(tmp_path)


def test_a_draft_with_the_targets_rope_shares_its_cache(tmp_path: Path) -> None:
    """get_rope's key (head size, rotary dim, positions, parameters, dtype) equal: one object."""
    g = load_preset("llama-3.1-8b")
    same = _custom_draft(tmp_path, max_position_embeddings=131072, rope_theta=500000.0,
                         rope_scaling={"factor": 8.0, "low_freq_factor": 1.0,
                                       "high_freq_factor": 4.0,
                                       "original_max_position_embeddings": 8192,
                                       "rope_type": "llama3"})
    d = load_draft(same, "eagle3", g)
    assert draft_buffer_bytes(d, g, 8192) == 16
    # (the same but its base: a cache of its own)
    (tmp_path / "b").mkdir()
    other = _custom_draft(tmp_path / "b", max_position_embeddings=131072, rope_theta=10000.0)
    assert draft_buffer_bytes(load_draft(other, "eagle3", g), g, 8192) == 16 + 131072 * 128 * 2


def test_a_yarn_draft_is_not_raised(tmp_path: Path) -> None:
    """YaRN sizes more than the cache: vLLM limits max_model_len to the draft's instead of
    raising its positions (original 2,048 x factor 2 rows whatever the target's length)."""
    g = load_preset("llama-3.1-8b")
    path = _custom_draft(tmp_path, rope_scaling={"rope_type": "yarn", "factor": 2.0,
                                                 "original_max_position_embeddings": 2048})
    assert draft_buffer_bytes(load_draft(path, "eagle3", g), g, 8192) == 16 + 4096 * 128 * 2


def test_each_stage_holds_its_own() -> None:
    """Gemma 3 27B over 3 stages: both RoPE caches and the normalizer on every stage, its
    layers' scales, SigLIP's position ids on the first only."""
    res = resolve_kv_cache_config("gemma-3-27b", gpu_memory_gib=80, pipeline_parallel_size=3,
                                  max_model_len=8192)
    ropes = 131072 * 8 * 128 * 2 + 131072 * 128 * 2 + 2
    assert [len(s.layers) for s in res.stages] == [21, 21, 20]
    assert [s.buffers_bytes for s in res.stages] == [
        ropes + 21 * 16 + 4096 * 8, ropes + 21 * 16, ropes + 20 * 16]
    for s in res.stages:
        assert s.available_bytes == int(80 * (1 << 30) * 0.92) - s.weights_bytes - s.buffers_bytes


def test_config_names_the_term() -> None:
    r = CliRunner().invoke(app, ["config", "llama-3.1-8b", "--gpu-memory-gib", "80", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["memory"]["buffers_bytes"] == LLAMA
    r = CliRunner().invoke(app, ["config", "llama-3.1-8b", "--gpu-memory-gib", "80"])
    assert ("- weights 14.96 GiB (estimated) - buffers 32.00 MiB (estimated: RoPE caches, "
            "attention scales) = 62,933,320,806 bytes") in r.stdout
    r = CliRunner().invoke(app, ["config", "llama-3.1-8b", "--gpu-memory-gib", "80",
                                 "--weights-gib", "15"])
    assert "- weights 15.00 GiB (buffers in it) = " in r.stdout
