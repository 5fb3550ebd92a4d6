"""ERNIE-4.5's text MoE and ERNIE-4.5-VL against vLLM 0.33.0's own classes, built on the meta
device at TP 1, 2, 4 and 8 (tests/data/weights_census/mm_ernie/answers.json, recorded by
record_towers.py there; every built rank's bytes and buffers: tests/test_tower_censuses.py):
what vLLM refuses, the MoE layers it builds, the tower's size, the blocks at 80 GiB, and the
one-line refusals of the keys kvcli cannot read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models.buffers import estimate_buffer_bytes
from kvcore.models.hf_config import read_hf_config
from tests.census_rows import kvcli_refusal, refused_tps

DATA = Path(__file__).parent / "data" / "weights_census" / "mm_ernie"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
REFUSED = [p for p in refused_tps(CASES) if p.values[0].startswith("ernie")]
VL = "ernie-4.5-vl-28b-a3b-pt"


def _config(base: str) -> dict:
    return json.loads((DATA / f"{base}.config.json").read_text())


@pytest.mark.parametrize(("name", "tp"), REFUSED)
def test_what_vllm_cannot_build_kvcli_refuses(name: str, tp: int) -> None:
    """TP 8 does not divide the 20 attention heads of the 21B and the 28B (vLLM's bare
    assertion in the text attention, the tower dropped or not)."""
    assert len(REFUSED) == 6 and {p.values[1] for p in REFUSED} == {8}
    assert CASES[name]["tp"][str(tp)][0]["refused"] == "AssertionError: "
    refusal = kvcli_refusal(DATA, CASES, name, tp)
    assert refusal.field == "tensor_parallel_size" and "20 attention heads" in refusal.message


@pytest.mark.parametrize(("base", "layers", "shared"), [
    # layer 0 dense (moe_layer_start_index 1), 2 shared experts of 1,536
    ("ernie-4.5-21b-a3b-pt", "d" + "M" * 27, 3072),
    ("ernie-4.5-300b-a47b-pt", "ddd" + "M" * 51, 0),
    # the keys left out: Ernie4_5_MoeConfig's start 1 and end -1, which it makes the last
    ("tiny-ernie-moe-class-defaults", "dMMM", 3072),
    ("tiny-ernie-moe-interval", "dMdMdd", 0),       # (interval 2 from 0 to 4)
])
def test_ernie_text_moe_layers_as_vllm_builds_them(base: str, layers: str, shared: int) -> None:
    g = read_hf_config(_config(base))
    assert "".join("M" if m else "d" for m in g.moe_layers) == layers
    assert g.shared_expert_width == shared
    # (the routers' count, float32 hidden x experts, as vLLM's recorded names give it)
    names = CASES[base]["tp"]["1"][0]["param_numel_by_name"]
    assert names["model.layers.*.mlp.gate.weight"] == layers.count("M") * g.hidden_size * (
        g.num_experts)


def test_ernie_vl_text_and_vision_experts() -> None:
    """The synthetic split: text experts over layers 1-5, vision experts 2-4; a dense MLP
    stands in for the vision experts in layers 1 and 5 (vLLM's mlp.vision_experts.*_proj)."""
    g = read_hf_config(_config("tiny-ernie-vl-split-experts"))
    v = g.vision_experts
    assert v is not None and (v.experts, v.width) == (16, 128)
    assert g.moe_layers == (False, True, True, True, True, True)
    assert v.routed == (False, False, True, True, True, False)
    names = CASES["tiny-ernie-vl-split-experts"]["tp"]["1"][0]["param_numel_by_name"]
    assert names["language_model.model.layers.*.mlp.vision_experts.gate_up_proj.weight"] == (
        2 * 2 * 3072 * 1024)


@pytest.mark.parametrize(("base", "total", "whole", "buffers"), [
    # 32 ViT blocks 1,280 wide (MLP 5,120), the patch projection and final norm; the resampler
    # from 5,120 (1,280 x 2 x 2), its temporal linears from 10,240, to the text width
    (VL, 774_658_560, 1_024_000, 80),
    ("ernie-4.5-vl-424b-a47b-pt", 803_505_664, 1_029_632, 80),
    ("tiny-ernie-vl-split-experts", 20_255_232, 316_416, 64),
])
def test_tower_sizes(base: str, total: int, whole: int, buffers: int) -> None:
    """vLLM's tower and resampler at TP 1 (the full build less the --language-model-only one,
    where recorded; its float32 inv_freq the buffer), whole on every rank as kvcli keeps it."""
    g = read_hf_config(_config(base))
    assert (g.vision_params, g.vision_whole, g.vision_buffers) == (total, whole, buffers)
    if f"{base} --language-model-only" in CASES:
        full, lmo = CASES[base]["tp"], CASES[f"{base} --language-model-only"]["tp"]
        assert total == full["1"][0]["param_numel"] - lmo["1"][0]["param_numel"]
        assert whole == 2 * (full["2"][0]["param_numel"] - lmo["2"][0]["param_numel"]) - total


def test_the_per_layer_mrope_caches_and_token_ids() -> None:
    """Each of the 28 layers builds its own MRoPE cache (4 x 131,072 positions x 128, bf16),
    and the class its 8-byte visual token ids, kept without the tower."""
    g = read_hf_config(_config(VL))
    assert len(g.rope_caches) == 28 and g.class_buffers == 8
    assert sum(c.nbytes for c in g.rope_caches) == 3_758_096_384
    lmo = CASES[f"{VL} --language-model-only"]["tp"]["1"][0]["buffer_bytes_by_dtype"]
    assert lmo["non_persistent"] == {"int64": 8, "bfloat16": 3_758_096_384}
    # (on two pipeline stages each holds its 14 layers' caches: not recorded from vLLM)
    assert estimate_buffer_bytes(g, 1, range(14, 28), False) == 14 * 134_217_728 + 14 * 16 + 8


@pytest.mark.parametrize(("base", "args", "blocks"), [
    (VL, [], 17932), (VL, ["--language-model-only"], 19620), (VL, ["-tp", "4"], 263920),
    ("ernie-4.5-21b-a3b-pt", [], 38511),        # (38,468 before: layer 0 as MoE, bf16 routers)
    ("ernie-4.5-300b-a47b-pt", ["-tp", "8"], 9089),     # (before: 29.5 GB over, did not fit)
])
def test_blocks_at_80_gib(base: str, args: list[str], blocks: int) -> None:
    """(the VL configs refused before: 'moe_num_experts' expected an integer)"""
    res = CliRunner().invoke(app, ["config", "--model-config", str(DATA / f"{base}.config.json"),
                                   "--gpu-memory-gib", "80", "--json", *args])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["num_blocks"] == blocks
    assert not [w for w in out["warnings"] if "tower" in w]


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"moe_num_experts": 64}, "moe_num_experts",
     "expected a list of two integers (text, vision), got 64"),
    ({"moe_num_experts": [64, 32]}, "moe_num_experts",
     ("the text and vision expert counts differ (64 and 32): vLLM's ERNIE-4.5-VL asserts "
      "them equal")),
    ({"moe_layer_start_index": None}, "moe_layer_start_index",
     "expected a list of two integers (text, vision), got None"),
    ({"use_bias": True}, "use_bias", "kvcli does not size ERNIE-4.5's biased projections"),
    ({"vision_config": {**_config(VL)["vision_config"], "hidden_size": 1024}},
     "vision_config.hidden_size",
     "1024 is not embed_dim (1280): vLLM's ERNIE-4.5-VL asserts them equal"),
    ({"pixel_hidden_size": "1280"}, "pixel_hidden_size", "expected an integer >= 1, got '1280'"),
])
def test_bad_keys_refused_in_one_line(change: dict, field: str, words: str) -> None:
    with pytest.raises(InputError) as e:
        read_hf_config({**_config(VL), **change}, source="c.json")
    assert (e.value.field, e.value.message) == (field, words)


def test_ernie_mtp_drafts_with_its_module() -> None:
    """vLLM 0.33 rewrites an ernie4_5_moe target for method mtp into ErnieMTPModel
    (config/speculative.py, ernie_mtp.py): one Llama decoder layer whose cache joins the
    target's group (weights_census/drafts2/). kvcli refused it as not modelled before; now at
    80 GiB: 38,511 blocks without the draft, 36,888 with it (29 layers a page, its own
    32 MiB RoPE cache)."""
    res = CliRunner().invoke(app, [
        "config", "--model-config", str(DATA / "ernie-4.5-21b-a3b-pt.config.json"),
        "--gpu-memory-gib", "80", "--speculative-config",
        '{"method": "mtp", "num_speculative_tokens": 1}'])
    assert res.exit_code == 0, res.output
    assert ("draft (mtp): ernie4_5_moe MTP, ErnieMTP: 1 layer of 4 kv heads x 128 in the "
            "groups (draft.layers.28)") in res.output
    assert "num_blocks = 36,888 = 35,054,126,486 // 950,272 " in res.output


def test_transformers_format_refused_in_one_line() -> None:
    """transformers 5.20's own ERNIE-4.5-VL format (a text_config): vLLM 0.33 fails on it (the
    KV-spec census recorded "'Ernie4_5_VLMoeVisionConfig' object has no attribute
    'embed_dim'"); kvcli refused it by 'moe_intermediate_size' before."""
    cfg = {"architectures": ["Ernie4_5_VLMoeForConditionalGeneration"],
           "model_type": "ernie4_5_vl_moe",
           "text_config": {**_config("ernie-4.5-21b-a3b-pt"), "model_type": "ernie4_5_vl_moe_text",
                           "moe_intermediate_size": [1536, 512]}}
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="c.json")
    assert e.value.field == "model_type" and "\n" not in e.value.message
    assert e.value.message.startswith("ERNIE-4.5-VL in transformers' format")
