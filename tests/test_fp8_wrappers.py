"""An fp8 ignore list of a LLaVA-family wrapper as vLLM 0.33 renames and matches it
(tests/data/weights_census/fp8_wrappers/: README.md). vLLM renames the list by the class's
hf_to_vllm_mapper and matches it at ``language_model.model.layers.N``; kvcli matched LLaVA's and
Mistral 3's lists as written against ``model.layers.N``: a half-named qkv vLLM refuses was
sized, bare names vLLM ignores were refused, an ignored down_proj was counted fp8 (LLaVA
36,204,696 B for vLLM's 36,335,764), and the refusals named ``model.layers.0...``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_weights_bytes

HERE = Path(__file__).resolve().parent / "data" / "weights_census" / "fp8_wrappers"
CASES = json.loads((HERE / "answers.json").read_text())["cases"]
QKV = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")


def _geometry(name: str):
    return read_hf_config(json.loads((HERE / f"{name}.config.json").read_text()),
                          source=f"{name}.config.json")


def test_every_case_was_recorded() -> None:
    assert sorted(CASES) == sorted(p.name.removesuffix(".config.json")
                                   for p in HERE.glob("*.config.json"))


@pytest.mark.parametrize(("name", "total"), [
    ("tiny-llava-clip-fp8-skip-mlp-hf-names", 36_335_764),
    ("tiny-llava-clip-fp8-skip-half-qkv-bare-names", 36_204_696),
    ("tiny-mistral3-fp8-skip-mlp-hf-names", 6_037_152)])
def test_the_bytes_are_vllms(name: str, total: int) -> None:
    assert sum(CASES[name]["tp"]["1"][0]["param_bytes_by_dtype"].values()) == total
    assert estimate_weights_bytes(_geometry(name), 1) == total


@pytest.mark.parametrize(("name", "head"), [
    ("tiny-llava-clip-fp8-skip-half-qkv-hf-names", "model.language_model.layers.0."),
    ("tiny-llava-clip-fp8-skip-half-qkv-vllm-names", "language_model.model.layers.0."),
    ("tiny-mistral3-fp8-skip-half-qkv-bare-names", "model.layers.0.")])
def test_a_half_named_qkv_is_refused_naming_vllms_module(name: str, head: str) -> None:
    said = CASES[name]["tp"]["1"][0]["refused"].removeprefix("ValueError: ")
    assert said == ("Detected some but not all shards of language_model.model.layers.0."
                    "self_attn.qkv_proj are quantized. All shards of fused layers to have the "
                    "same precision.")
    with pytest.raises(InputError) as e:
        _geometry(name)
    q, k, v = (head + x for x in QKV)
    assert str(e.value) == (
        f"{name}.config.json: field 'quantization_config.ignored_layers': names {q}, {k} but "
        f"not {v}, shards of one fused linear, and vLLM refuses to build it: \"{said}\"")
