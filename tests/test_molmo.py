"""Molmo (`MolmoForCausalLM`): its language model and tower as kvcli reads them, beside what
tests/test_tower_censuses.py checks on every rank against vLLM 0.33.0's own class
(tests/data/weights_census/mm_nemo/): the text model's fused MLP width, padded embedding and
q/k norms (kvcli read the fused width as each of gate and up before: 24.81 GiB of weights for
Molmo-7B-D, not 14.94), the tower at TP 1, the 80 GiB blocks, and what vLLM cannot build,
refused in one line naming the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import refused_tps

DATA = Path(__file__).parent / "data" / "weights_census" / "mm_nemo"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
MOLMO = {n: c for n, c in CASES.items() if "molmo" in n and "refused" not in c}


def _config(base: str) -> dict:
    return json.loads((DATA / f"{base}.config.json").read_text())


def test_the_text_model_is_read_as_vllm_builds_it() -> None:
    """Molmo-7B-D: 37,888 fused (18,944 each of gate and up), 152,064 + 128 embedding rows and
    a 152,064-row head, QKV biases; Molmo-7B-O: q/k norms 4,096 + 32 x 128 wide."""
    d = read_hf_config(_config("molmo-7b-d-0924"))
    assert (d.intermediate_size, d.vocab_size, d.added_vocab, d.attention_bias, d.qk_norm) == (
        18_944, 152_064, 128, True, False)
    o = read_hf_config(_config("molmo-7b-o-0924"))
    assert (o.qk_norm, o.qk_norm_width, o.num_kv_heads) == (True, 8_192, 32)


def test_the_tower_is_vllms() -> None:
    """CLIP ViT-L/14-336 less its last layer, the pooling, the projector into 3,584 and the pad
    embeddings: 404,950,016 parameters, the difference vLLM's class makes without it."""
    g = read_hf_config(_config("molmo-7b-d-0924"))
    whole, lm_only = (CASES[n]["tp"]["1"][0]["param_numel"]
                      for n in ("molmo-7b-d-0924", "molmo-7b-d-0924 --language-model-only"))
    assert g.vision_params == whole - lm_only == 404_950_016
    assert (g.vision_modalities, g.vision_data_parallel) == (("image",), False)


@pytest.mark.parametrize(("base", "blocks"), [
    # (before: 57,099 and 6,648, the fused MLP read twice over and the tower uncounted)
    ("molmo-7b-d-0924", 68_647), ("molmo-7b-o-0924", 7_593)])
def test_80_gib_blocks_without_the_uncounted_tower_warning(base: str, blocks: int) -> None:
    res = CliRunner().invoke(app, ["config", "--model-config", str(DATA / f"{base}.config.json"),
                                   "--gpu-memory-gib", "80", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["num_blocks"] == blocks
    assert not [w for w in doc["warnings"] if "multimodal tower" in w]


@pytest.mark.parametrize(("name", "tp"), refused_tps(MOLMO))
def test_a_tp_vllm_cannot_build_kvcli_refuses(name: str, tp: int) -> None:
    """Molmo-7B-D's 28 heads at TP 8 (vLLM: an AssertionError), whatever the options."""
    assert "AssertionError" in MOLMO[name]["tp"][str(tp)][0]["refused"]
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=read_hf_config(_config(name.split(" ")[0])),
                                tensor_parallel_size=tp, gpu_memory_gib=80, max_model_len=4096)
    assert e.value.field == "tensor_parallel_size"


def test_null_kv_heads_are_refused_as_vllm_refuses_them() -> None:
    assert "total_num_kv_heads\n  Input should be a valid integer" in CASES[
        "tiny-molmo-kv-null"]["refused"]
    with pytest.raises(InputError) as e:
        read_hf_config(_config("tiny-molmo-kv-null"), name="x.json")
    assert e.value.field == "num_key_value_heads"
    assert e.value.message.endswith("(Input should be a valid integer)")


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"weight_tying": True}, "weight_tying", "true: vLLM's molmo.py ties the head to "),
    ({"layer_norm_type": "default"}, "layer_norm_type", "'default': vLLM's molmo.py builds "),
    ({"moe_num_experts": 64}, "moe_num_experts", "64 (MolmoE): vLLM's molmo.py builds a dense"),
    ({"intermediate_size": 1}, "intermediate_size", "expected an integer >= 2 (the fused"),
])
def test_what_vllm_cannot_build_is_refused(change: dict, field: str, words: str) -> None:
    with pytest.raises(InputError) as e:
        read_hf_config({**_config("molmo-7b-d-0924"), **change}, name="x.json")
    assert e.value.field == field
    assert e.value.message.startswith(words)


def test_a_quantised_molmo_is_sized_under_the_methods_kvcli_models() -> None:
    """Its tower's linears take the quant_config: fp8 (and AWQ, GPTQ, compressed-tensors)
    sized with them (tests/test_quant_voxtral_molmo.py), other methods refused by name."""
    cfg = {**_config("molmo-7b-d-0924"), "quantization_config": {
        "quant_method": "fp8", "activation_scheme": "dynamic"}}
    assert read_hf_config(cfg).weights_unmodelled == ""
    cfg["quantization_config"] = {"quant_method": "quark"}
    assert read_hf_config(cfg).weights_unmodelled == "a quantised Molmo checkpoint's vision tower"
