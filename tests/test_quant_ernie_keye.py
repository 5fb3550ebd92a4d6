"""Keye-VL 1.5's and ERNIE-4.5-VL's quantised towers against vLLM 0.33.0's classes, built on the
meta device at TP 1, 2, 4 and 8 (tests/data/weights_census/quant_ernie_keye/answers.json,
recorded by record_quant_ernie_keye.py there): every built rank's bytes and buffers, and every
refusal; ERNIE-4.5-VL's tower under fp8 by vLLM's parameter names too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.int_quant_rank import unquantised_method
from kvcore.models.mm_serving import vision_rank_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import (
    assert_rank_equal,
    built_ranks,
    case_geometry,
    refused_tps,
    vllms_words,
)

DATA = Path(__file__).parent / "data" / "weights_census" / "quant_ernie_keye"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
KEYE = {n: c for n, c in CASES.items() if n.startswith("tiny-keye")}
ERNIE = {n: c for n, c in CASES.items() if n.startswith("tiny-ernie")}


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(KEYE))
def test_keye_bytes_and_buffers_per_rank_equal_vllms(name: str, tp: int, rank: int) -> None:
    assert len(KEYE) == 8
    g = case_geometry(DATA, CASES, name)
    assert_rank_equal(g, tp, KEYE[name]["tp"][str(tp)][rank])


@pytest.mark.parametrize(("name", "tp"), refused_tps(KEYE))
def test_keye_what_vllm_cannot_build_kvcli_refuses(name: str, tp: int) -> None:
    """Its 4 tower heads at TP 8; fp8 blocks, AWQ and W4A16 groups of 128 over the 256-wide
    tower at TP 4 (the first out_proj's input, 64)."""
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=case_geometry(DATA, CASES, name),
                                tensor_parallel_size=tp, gpu_memory_gib=80, max_model_len=4096)
    assert e.value.field == "tensor_parallel_size"
    said = "4 attention heads" if tp == 8 else "do not split over it (the vision tower's visual."
    assert said in e.value.message


def _tower_bytes(rank: dict) -> int:
    """vLLM's tower bytes on a rank under fp8, by its parameter names: the ViT blocks' linear
    weights one byte, their scales float32, the rest (resampler included) bfloat16."""
    out = 0
    for name, numel in rank["param_numel_by_name"].items():
        if not name.startswith(("vision_model.", "resampler_model.")):
            continue
        linear = name.startswith("vision_model.blocks.") and name.endswith(
            ("qkv.weight", "proj.weight", "fc1.weight", "fc2.weight"))
        out += numel * (1 if linear else 4 if "scale" in name else 2)
    return out


@pytest.mark.parametrize("name", ["tiny-ernie-vl-fp8", "tiny-ernie-vl-fp8-block"])
def test_ernie_vl_tower_under_fp8_is_vllms(name: str) -> None:
    """The ViT blocks' qkv, proj, fc1 and fc2 in fp8 with their scales (before: bfloat16, the
    whole model 9,829,696 B over vLLM's at TP 1), the resampler in bfloat16 (it reads a
    quant_config off the hf_config, which has none)."""
    g = case_geometry(DATA, CASES, name)
    for tp, ranks in CASES[name]["tp"].items():
        if "refused" not in ranks[0]:
            assert vision_rank_bytes(g, int(tp)) == _tower_bytes(ranks[0]), tp
    assert "refused" in CASES["tiny-ernie-vl-fp8-block"]["tp"]["8"][0]


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(ERNIE))
def test_ernie_bytes_and_buffers_per_rank_equal_vllms(name: str, tp: int, rank: int) -> None:
    """The language model too: its float32 routers built with the quant_config (fp8 one byte
    with a scale, before counted float32: 392,584 B over vLLM's at TP 1; AWQ, GPTQ and
    compressed-tensors packed with float32 scales), its vision experts and the dense MLPs
    beside them quantised (before: the whole model unquantised with a warning, AWQ's
    200,711,680 B over vLLM's at TP 1)."""
    assert len(ERNIE) == 14
    g = case_geometry(DATA, CASES, name)
    assert unquantised_method(g) is None
    assert_rank_equal(g, tp, ERNIE[name]["tp"][str(tp)][rank])


@pytest.mark.parametrize(("name", "tp"), refused_tps(ERNIE))
def test_ernie_what_vllm_cannot_build_kvcli_refuses_in_its_words(name: str, tp: int) -> None:
    """The tower's 512-wide proj over 8 ranks (AWQ's, W4A16's groups and fp8's blocks of 128),
    and the shared expert's 256-wide down_proj over 4 (built before the text experts);
    W4A16's experts whose width on a rank is not whole groups (the vision experts' 64 at TP 2,
    the text experts' at TP 4); MoeWNA16's assertion where AWQ or GPTQ experts 16 wide (the
    vision experts at TP 8) cannot halve the group to fit."""
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=case_geometry(DATA, CASES, name),
                                tensor_parallel_size=tp, gpu_memory_gib=80, max_model_len=4096)
    assert e.value.field == "tensor_parallel_size"
    said = vllms_words(ERNIE[name]["tp"][str(tp)][0]["refused"]).rstrip(": ")
    if said == "AssertionError":
        said = "vision_experts), and vLLM refuses to build it: \"AssertionError: assert " \
               "group_size >= 32\""
    assert said in e.value.message
