"""Keye-VL (`KeyeForConditionalGeneration`, `KeyeVL1_5ForConditionalGeneration`) against vLLM
0.33.0's own classes, built on the meta device at TP 1, 2, 4 and 8
(tests/data/weights_census/mm_ernie/answers.json; every built rank's bytes and buffers:
tests/test_tower_censuses.py): its text model read as Qwen3's, the tower's size, what vLLM
refuses, and the blocks at 80 GiB."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import case_geometry

DATA = Path(__file__).parent / "data" / "weights_census" / "mm_ernie"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]


def _config(base: str) -> dict:
    return json.loads((DATA / f"{base}.config.json").read_text())


@pytest.mark.parametrize(("base", "rope_rows"), [
    ("keye-vl-8b-preview", 4 * 40960), ("keye-vl-1_5-8b", 4 * 131072)])
def test_the_text_model_is_qwen3s(base: str, rope_rows: int) -> None:
    """vLLM builds Qwen3ForCausalLM on the top-level keys: q/k norms (36 layers x 2 x 128,
    kvcli missed them) and an MRoPE cache of 4 x the positions (kvcli had 1 x)."""
    g = read_hf_config(_config(base))
    assert (g.model_type, g.qk_norm) == ("qwen3", True)
    assert [c.rows for c in g.rope_caches] == [rope_rows]
    names = CASES[f"{base} --language-model-only"]["tp"]["1"][0]["param_numel_by_name"]
    assert names["language_model.model.layers.*.self_attn.q_norm.weight"] == 36 * 128


@pytest.mark.parametrize(("base", "total", "whole", "buffers"), [
    # SigLIP-shaped: 27 layers 1,152 wide (MLP 4,304), 729 + 32,768 position embeddings, the
    # projector from 4,608 to 4,096 (1.5's pre-norm over 4,608, the preview's over 1,152);
    # position_ids 729 x 8 B and inv_freq 18 x 4 B
    ("keye-vl-8b-preview", 490_855_024, 39_462_400, 5_904),
    ("keye-vl-1_5-8b", 490_861_936, 39_469_312, 5_904),
    ("tiny-keye-vl-1_5", 11_760_896, 8_611_584, 2_112),
])
def test_tower_sizes(base: str, total: int, whole: int, buffers: int) -> None:
    """vLLM's tower and projector at TP 1 (the full build less the --language-model-only one,
    where recorded), whole on every rank as kvcli keeps it."""
    g = read_hf_config(_config(base))
    assert (g.vision_params, g.vision_whole, g.vision_buffers) == (total, whole, buffers)
    if f"{base} --language-model-only" in CASES:
        full, lmo = CASES[base]["tp"], CASES[f"{base} --language-model-only"]["tp"]
        assert total == full["1"][0]["param_numel"] - lmo["1"][0]["param_numel"]
        assert whole == 2 * (full["2"][0]["param_numel"] - lmo["2"][0]["param_numel"]) - total


def test_tp_must_divide_the_towers_heads() -> None:
    """The tiny tower's 4 heads at TP 8: vLLM's bare assertion in KeyeSiglipAttention."""
    assert CASES["tiny-keye-vl-1_5"]["tp"]["8"] == [{
        "refused": "AssertionError: ", "traceback_tail": [
            ('  File "/root/.cache/vllm-oracle/src/vllm/model_executor/models/keye.py", line '
             '344, in __init__'), "    assert self.total_num_heads % tp_size == 0",
            "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^", "AssertionError"]}]
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=case_geometry(DATA, CASES, "tiny-keye-vl-1_5"),
                                tensor_parallel_size=8, gpu_memory_gib=80, max_model_len=4096)
    assert (e.value.field, e.value.message) == (
        "tensor_parallel_size", ("tiny-keye-vl-1_5's vision tower has 4 attention heads, "
                                 "which must be divisible by it, as vLLM requires; got 8"))


def test_data_mode_falls_back_to_weights() -> None:
    assert CASES["keye-vl-1_5-8b --mm-encoder-tp-mode data"]["multimodal_config"][
        "mm_encoder_tp_mode"] == "weights"


@pytest.mark.parametrize(("base", "args", "blocks"), [
    # (before: 26,548 and 26,538, the tower uncounted with a warning, no q/k norms, MRoPE x 1)
    ("keye-vl-8b-preview", [], 26118), ("keye-vl-1_5-8b", [], 26079),
    ("keye-vl-1_5-8b", ["--language-model-only"], 26495), ("keye-vl-1_5-8b", ["-tp", "2"], 59485),
])
def test_blocks_at_80_gib(base: str, args: list[str], blocks: int) -> None:
    res = CliRunner().invoke(app, ["config", "--model-config", str(DATA / f"{base}.config.json"),
                                   "--gpu-memory-gib", "80", "--json", *args])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["num_blocks"] == blocks
    assert not [w for w in out["warnings"] if "tower" in w]
