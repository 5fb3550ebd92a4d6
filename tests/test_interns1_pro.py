"""kvcli's Intern-S1-Pro against vLLM 0.33.0's class built on the meta device
(tests/data/weights_census/mm_audio/, every built rank: tests/test_tower_censuses.py): its text
model read as the Qwen3-MoE layers vLLM builds (q/k norms, mlp_only_layers), its FoPE
coefficients and cache a rank, Qwen3-VL's tower without deepstack, and the FoPE settings vLLM
cannot build refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.buffers import estimate_buffer_bytes
from kvcore.models.hf_config import read_hf_config

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
