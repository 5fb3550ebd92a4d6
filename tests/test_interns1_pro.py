"""kvcli's Intern-S1-Pro against vLLM 0.33.0's class built on the meta device
(tests/data/weights_census/mm_audio/, every built rank: tests/test_tower_censuses.py): its text
model read as the Qwen3-MoE layers vLLM builds (q/k norms, mlp_only_layers), its FoPE
coefficients and cache a rank, Qwen3-VL's tower without deepstack, and the FoPE settings vLLM
cannot build refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models.buffers import estimate_buffer_bytes
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_weights_bytes

DATA = Path(__file__).parent / "data" / "weights_census" / "mm_audio"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
COEF = "language_model.model.layers.*.self_attn.rotary_emb.cos_coef"


def _config(base: str) -> dict:
    return json.loads((DATA / f"{base}.config.json").read_text())


@pytest.mark.parametrize(("base", "freqs", "coef"), [
    # 45 of head_dim 128's 64 frequencies lie above 2 pi / 262,144 at theta 5e6; 4 KV heads
    ("intern-s1-pro-bf16", 45, {"1": 4 * 45 * 45, "2": 2 * 45 * 45, "8": 45 * 45}),
    # num_inv_freq 20 of 32; 2 KV heads, one a rank from TP 2 (replicated at TP 4)
    ("tiny-intern-s1-pro-fope", 20, {"1": 800, "2": 400, "4": 400}),
])
def test_fope_coefficients_and_cache_a_rank(base: str, freqs: int, coef: dict) -> None:
    """One FoPE module for all layers (get_rope's cache): cos_coef (and sin_coef) of the
    rank's KV heads x F x F, its cos_sin_cache max_position x KV heads x 2 x head_dim, no
    RoPE cache beside it."""
    g = read_hf_config(_config(base))
    assert g.fope_freqs == freqs and g.rope_caches == ()
    for tp, numel in coef.items():
        rank = CASES[base]["tp"][tp][0]
        assert rank["param_numel_by_name"][COEF] == numel
        kv = max(1, g.num_kv_heads // int(tp))
        assert numel == kv * freqs * freqs
        cache = g.max_position_embeddings * kv * 2 * g.head_dim * 2
        assert cache + 4 * freqs <= estimate_buffer_bytes(g, int(tp))


@pytest.mark.parametrize(("base", "total", "whole"), [
    # depth 24, 1,024 wide, 2,304 positions, the merger to 4,096; no deepstack merger
    ("intern-s1-pro-bf16", 339_807_232, 4_086_784),
    ("tiny-intern-s1-pro-fope", 313_408, 115_904),
])
def test_vision_tower_at_tp_1(base: str, total: int, whole: int) -> None:
    g = read_hf_config(_config(base), name=base)
    full, lmo = CASES[base]["tp"], CASES[f"{base} --language-model-only"]["tp"]
    assert total == full["1"][0]["param_numel"] - lmo["1"][0]["param_numel"]
    assert whole == 2 * (full["2"][0]["param_numel"] - lmo["2"][0]["param_numel"]) - total
    assert (g.vision_params, g.vision_whole, g.vision_deepstack) == (total, whole, 0)
    assert not any("deepstack" in n for n in full["1"][0]["param_numel_by_name"])
    assert g.vision_data_parallel


def test_text_model_is_qwen3_moe_with_its_dense_layers() -> None:
    """kvcli read interns1_pro_text as a plain decoder before: no q/k norms, every layer
    MoE though mlp_only_layers makes layer 1 dense."""
    g = read_hf_config(_config("tiny-intern-s1-pro-fope"))
    names = CASES["tiny-intern-s1-pro-fope"]["tp"]["1"][0]["param_numel_by_name"]
    assert g.model_type == "qwen3_moe" and g.qk_norm and g.moe_layers == (True, False, True)
    assert "language_model.model.layers.*.self_attn.q_norm.weight" in names
    assert "language_model.model.layers.*.mlp.gate_up_proj.weight" in names


@pytest.mark.parametrize(("rope", "field", "words"), [
    ({"rope_type": "default"}, "text_config.rope_scaling", "should use FOPE for InternS1Pro"),
    ({"rope_type": "default", "fope_init_factor": 0.5, "fope_sep_head": False},
     "text_config.rope_scaling.fope_sep_head", "einsum(): the number of subscripts"),
])
def test_fope_settings_vllm_cannot_build_are_refused(rope: dict, field: str, words: str) -> None:
    cfg = _config("tiny-intern-s1-pro-fope")
    cfg = {**cfg, "text_config": {**cfg["text_config"], "rope_scaling": rope}}
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="config.json")
    assert e.value.field == field and e.value.message.startswith(words)
    assert "\n" not in str(e.value)


def test_fp8_checkpoint_keeps_what_its_list_names_unquantised() -> None:
    """The published fp8 checkpoint's modules_to_not_convert names the router gates and every
    tower module by the checkpoint's paths (model.language_model..., model.visual...), which
    vLLM renames by the class's mapper before matching: kvcli quantised the gates and the tower
    before (239,016,960 B short a rank at TP 8). 141 GiB at TP 8: 31,113 blocks before (the
    tower uncounted), 30,906 now."""
    g = read_hf_config(_config("intern-s1-pro"))
    rank = CASES["intern-s1-pro"]["tp"]["8"][0]
    assert rank["param_bytes_by_dtype"] == {"bfloat16": 805_429_908,
                                            "float8_e4m3fn": 114_435_293_184,
                                            "float32": 111_103_488}
    assert estimate_weights_bytes(g, 8) == sum(rank["param_bytes_by_dtype"].values())
    path = str(DATA / "intern-s1-pro.config.json")
    res = CliRunner().invoke(app, ["config", "--model-config", path, "--gpu-memory-gib", "141",
                                   "--tensor-parallel-size", "8", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["num_blocks"] == 30_906
