"""The dtype vLLM 0.33.0 runs a model at where a multimodal wrapper, its text_config and its
vision_config name different ones, or one config names both ``dtype`` and ``torch_dtype``
(tests/data/weights_census/mm_dtype/: vLLM's ModelConfig.dtype and every rank's bytes at TP 1,
2 and 4): the wrapper's first (ModelArchConfigConvertorBase.get_torch_dtype), else the text
config's, else the vision config's; ``dtype`` over ``torch_dtype`` (transformers 5); float32
run as bfloat16 (--dtype auto)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.models import layer_specs
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_weights_bytes
from tests.census_rows import built_ranks

HERE = Path(__file__).parent / "data" / "weights_census" / "mm_dtype"
CASES = {n.split("/")[-1].removesuffix(".config.json"): c
         for n, c in json.loads((HERE / "answers.json").read_text())["cases"].items()}


def _read(name: str):
    return read_hf_config(json.loads((HERE / f"{name}.config.json").read_text()), name=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_model_dtype_is_vllms(name: str) -> None:
    assert _read(name).dtype == CASES[name]["dtype"]


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES))
def test_each_rank_is_vllms_bytes(name: str, tp: int, rank: int) -> None:
    rec = CASES[name]["tp"][str(tp)][rank]
    assert set(rec["param_bytes_by_dtype"]) == {CASES[name]["dtype"]}
    assert estimate_weights_bytes(_read(name), tp) == sum(rec["param_bytes_by_dtype"].values())


def test_the_wrapper_names_the_dtype_before_its_text_config() -> None:
    # (kvcli took the text config's over the wrapper's, and torch_dtype over dtype: 5 of the
    # 9 cases' dtypes differed; float16 and bfloat16 weigh the same, so the bytes did not)
    assert [CASES[n]["dtype"] for n in ("llava-wrapper-f16-text-bf16",
                                        "llava-wrapper-f32-text-f16",
                                        "llava-wrapper-dtype-bf16-torch-f16",
                                        "llava-vision-only-f16",
                                        "llama-dtype-f16-torch-bf16")] == [
        "float16", "bfloat16", "bfloat16", "float16", "float16"]
    assert (len(CASES), len(built_ranks(CASES))) == (9, 63)


def test_the_kv_cache_takes_the_model_dtype() -> None:
    # (--kv-cache-dtype auto: the model's, the wrapper's float16 over its text config's bfloat16)
    for name, dtype in (("llava-wrapper-f16-text-bf16", "float16"),
                        ("llava-wrapper-f32-text-f16", "bfloat16")):
        specs = layer_specs(_read(name), max_model_len=4096).values()
        assert {s.dtype for s in specs} == {dtype}
