"""What vLLM 0.33.0's AWQ and GPTQ configs read beyond config.json (maybe_update_config): with
no ``modules_to_not_convert`` (AWQ) or ``modules_in_block_to_quantize`` (GPTQ), the
checkpoint's safetensors headers, a module stored without packed integers left unquantised.
kvcli reads config.json only (docs/config.md): recorded by vLLM with and without such a
checkpoint beside the config (tests/data/weights_census/awq_metadata/, TP 1, 2 and 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_weights_bytes
from tests.census_rows import built_ranks

HERE = Path(__file__).parent / "data" / "weights_census" / "awq_metadata"
CASES = {n.split("/")[-1].removesuffix(".config.json"): c
         for n, c in json.loads((HERE / "answers.json").read_text())["cases"].items()}
# (the cases whose checkpoint stores layer 1's down_proj as a float16 weight)
IN_CHECKPOINT = sorted(n for n in CASES if (HERE / f"{n}.header.json").exists())


def _read(name: str):
    return read_hf_config(json.loads((HERE / f"{name}.config.json").read_text()), name=name)


def _vllm(name: str, tp: int) -> int:
    return sum(CASES[name]["tp"][str(tp)][0]["param_bytes_by_dtype"].values())


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES, skip=IN_CHECKPOINT))
def test_config_json_alone_is_vllms_bytes(name: str, tp: int, rank: int) -> None:
    rec = CASES[name]["tp"][str(tp)][rank]
    assert estimate_weights_bytes(_read(name), tp) == sum(rec["param_bytes_by_dtype"].values())


def test_a_module_the_checkpoint_keeps_unquantised_is_not_seen() -> None:
    # (layer 1's down_proj, 2,816 x 1,024 in float16 where AWQ packs it in 4 bits: vLLM
    # 148,698,112 B at TP 1, kvcli 144,429,056 as with every linear packed)
    assert IN_CHECKPOINT == ["llama-awq-plain-in-checkpoint", "llama-gptq-plain-in-checkpoint"]
    for name in IN_CHECKPOINT:
        plain = name.replace("-plain-in-checkpoint", "")
        for tp in (1, 2):
            assert estimate_weights_bytes(_read(name), tp) == _vllm(plain, tp)
        assert _vllm(name, 1) - estimate_weights_bytes(_read(name), 1) == 4_269_056
    # named in config.json's modules_to_not_convert, as docs/config.md asks, it is counted
    for tp in (1, 2):
        assert estimate_weights_bytes(_read("llama-awq-plain-listed"), tp) == _vllm(
            "llama-awq-plain-in-checkpoint", tp)
