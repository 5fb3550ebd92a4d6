"""kvcli's Pixtral in Mistral's format (`PixtralForConditionalGeneration`),
Phi-4-reasoning-vision (`Phi4ForCausalLMV`) and MiniCPM-V 4.6 / 4.7 against vLLM 0.33.0's own
classes, built on the meta device at TP 1, 2, 4 and 8, every rank (Pixtral from the
checkpoints' params.json), alone and under the multimodal serving options
(tests/data/weights_census/mm_towers12/answers.json; every built rank's bytes are checked by
tests/test_tower_censuses.py): the towers that went uncounted (or, MiniCPM-V's, were counted
as Qwen3.5's), vLLM's refusals, and the params.json kvcli does not read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_params
from tests.census_rows import assert_config_blocks, kvcli_refusal, refused_tps

DATA = Path(__file__).parent / "data" / "weights_census" / "mm_towers12"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
REFUSED = refused_tps({n: c for n, c in CASES.items() if "refused" not in c})


def _config(base: str, kind: str = "config") -> dict:
    return json.loads((DATA / f"{base}.{kind}.json").read_text())


@pytest.mark.parametrize(("name", "tp"), REFUSED)
def test_what_vllm_cannot_build_kvcli_refuses(name: str, tp: int) -> None:
    """The tiny configs' 4 text heads at TP 8 (and tiny-pixtral's 4 vision heads); Phi-4's 10
    KV heads at TP 4 and 8, its tower's options alike; MiniCPM-V's 12 vision heads at TP 8
    (constructed when skipped too; held whole under ``data``, which builds)."""
    assert len(REFUSED) == 31 and {p.values[1] for p in REFUSED} == {4, 8}
    assert kvcli_refusal(DATA, CASES, name, tp).field == "tensor_parallel_size"


@pytest.mark.parametrize(("base", "tower"), [
    # 24 layers 1,024 wide (MLP 4,096), patch 16, the biased adapter 1,024 -> 5,120 -> 5,120
    ("pixtral-12b-2409", 434_957_312),
    # patch 14, the pre-projector RMSNorm, the 2 x 2 patch merger, the bias-free adapter
    ("mistral-small-3.1-24b-2503", 438_958_080),
    # SigLIP2 so400m/16 NaFlex to its 26th layer (256 positions), no post-norm; the biased
    # projector 1,152 -> 5,120 -> 5,120
    ("phi-4-reasoning-vision-15b", 429_530_784),
    # NaViT 12 layers 768 wide (MLP 3,072), 196 positions, the post-norm; the window attention
    # merger (MLP 3,072 -> 12,288 -> 768) and the 2 x 2 merger to 4,096
    ("minicpm-v-4_6-defaults", 157_399_552), ("minicpm-v-4_7-defaults", 157_399_552),
    # drop_vision_last_layer: 4.6 builds 2 of 3 layers, 4.7 all 3 whatever it says
    ("tiny-minicpm-v-4_6", 422_656), ("tiny-minicpm-v-4_7", 456_128),
])
def test_the_tower_at_tp1_is_vllms(base: str, tower: int) -> None:
    g = read_hf_config(_config(base))
    assert (g.vision_params, g.vision_buffers) == (tower, 0)
    lm = CASES[f"{base} --language-model-only"]["tp"]["1"][0]["param_numel"]
    assert estimate_params(g)[0] - tower == lm == CASES[base]["tp"]["1"][0]["param_numel"] - tower


def test_missing_encoder_args_are_refused_in_vllms_words() -> None:
    refused = CASES["tiny-pixtral-missing"]["refused"]
    with pytest.raises(InputError) as e:
        read_hf_config(_config("tiny-pixtral-missing"), source="config.json")
    assert refused == "TypeError: " + str(e.value).split(": ", 2)[2].removesuffix(
        " (vLLM's PixtralForConditionalGeneration)")
    assert e.value.field == "vision_config.rope_theta"


def test_phi4_without_mm_hidden_size_is_refused() -> None:
    cfg = _config("tiny-phi4-siglip")
    del cfg["mm_hidden_size"]
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="config.json")
    assert str(e.value) == (
        "config.json: field 'mm_hidden_size': missing: vLLM's Phi4ForCausalLMV reads it (the "
        "projector's input width), which Phi3Config does not define")


def test_a_params_json_is_refused_in_one_line() -> None:
    out = CliRunner().invoke(app, ["config", "--model-config",
                                   str(DATA / "pixtral-12b-2409.params.json")])
    assert out.exit_code == 2 and len(out.output.strip().splitlines()) == 1
    assert "field 'dim': a Mistral-format params.json, which kvcli does not read" in out.output


@pytest.mark.parametrize(("base", "tp", "blocks"), [
    # 20,789 and 231,725 before: the tower uncounted, with a warning
    ("pixtral-12b-2409", 1, "20,457"), ("pixtral-12b-2409", 8, "231,221"),
    # 12,149 and 223,083 before
    ("mistral-small-3.1-24b-2503", 1, "11,814"), ("mistral-small-3.1-24b-2503", 8, "222,554"),
    # 15,167 and 39,281 before
    ("phi-4-reasoning-vision-15b", 1, "14,905"), ("phi-4-reasoning-vision-15b", 2, "39,018"),
    # 5,787 and 28,394 before: Qwen3.5's tower counted from the vision_config (and its buffers)
    ("minicpm-v-4_6-defaults", 1, "5,798"), ("minicpm-v-4_7-defaults", 4, "28,366"),
])
def test_kvcli_config_sizes_them(base: str, tp: int, blocks: str) -> None:
    assert_config_blocks(DATA / f"{base}.config.json", blocks, "--tensor-parallel-size", str(tp))
