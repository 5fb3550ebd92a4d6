"""Qwen2-VL's, Qwen2.5-VL's and Qwen3.5's towers at ``visual.`` under AWQ, GPTQ,
compressed-tensors and ModelOpt against vLLM 0.33.0 (tests/data/weights_census/quant_towers/,
the ``qwen*`` cases; every rank's bytes are tests/test_quant_towers.py's): packed or fp8 as
the language model's linears, left out by the lists, their shards refused in vLLM's words.
kvcli counted them unquantised with the warning before (qwen2-vl-7b-awq at TP 1:
16,582,751,232 B for vLLM's 5,924,858,880)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.int_quant_rank import unquantised_method
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import case_geometry

DATA = Path(__file__).parent / "data" / "weights_census" / "quant_towers"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]


@pytest.mark.parametrize(("name", "want"), [
    ("qwen2-vl-7b-awq", 5_924_858_880), ("qwen2-vl-7b-awq-skip-tower", 6_922_265_600),
    ("qwen2-vl-7b-ct-w4a16", 5_896_742_168), ("qwen2-vl-7b-modelopt-fp8", 9_383_755_536),
    ("qwen2.5-vl-7b-gptq", 5_925_072_640), ("qwen2.5-vl-7b-ct-fp8", 9_391_807_992),
    ("qwen3-5-vl-awq", 65_252_912), ("qwen3-5-moe-vl-ct-w4a16", 66_472_082),
    ("qwen3-5-vl-modelopt-fp8", 119_916_496),
])
def test_the_tower_sized_at_tp_1(name: str, want: int) -> None:
    g = case_geometry(DATA, CASES, name)
    assert sum(CASES[name]["tp"]["1"][0]["param_bytes_by_dtype"].values()) == want
    assert estimate_weights_bytes(g, 1) == want and unquantised_method(g) is None


@pytest.mark.parametrize(("name", "words"), [
    ("qwen2.5-vl-7b-awq", "\"The input size is not aligned with the quantized weight shape."),
    ("qwen2.5-vl-7b-ct-w4a16", ("\"Weight input_size_per_partition=3420 for layer "
                                "'visual.blocks.0.mlp.down_proj' is not divisible by "
                                "group_size=128.")),
])
def test_qwen2_5_vls_down_proj_is_refused_at_every_tp(name: str, words: str) -> None:
    """The tower's MLP is 3,420 wide: not whole 128-groups even whole (TP 1)."""
    for tp in (1, 2):
        with pytest.raises(InputError) as e:
            resolve_kv_cache_config(geometry=case_geometry(DATA, CASES, name),
                                    tensor_parallel_size=tp, gpu_memory_gib=4096,
                                    max_model_len=4096)
        assert "(the vision tower's visual.blocks.0.mlp.down_proj)" in e.value.message
        assert (words if tp == 1 else words.replace("3420", "1710")) in e.value.message
        assert CASES[name]["tp"][str(tp)][0]["refused"].startswith("ValueError")
