"""Keye-VL 1.5's and ERNIE-4.5-VL's quantised towers against vLLM 0.33.0's classes, built on the
meta device at TP 1, 2, 4 and 8 (tests/data/weights_census/quant_ernie_keye/answers.json,
recorded by record_quant_ernie_keye.py there). Keye-VL: every built rank's bytes and buffers,
and every refusal. ERNIE-4.5-VL: its ViT blocks' linears under fp8 (the tower's bytes by
vLLM's parameter names; its language model under quantisation is not vLLM's: README)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.mm_serving import vision_rank_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import assert_rank_equal, built_ranks, case_geometry, refused_tps

DATA = Path(__file__).parent / "data" / "weights_census" / "quant_ernie_keye"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
KEYE = {n: c for n, c in CASES.items() if n.startswith("tiny-keye")}


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
