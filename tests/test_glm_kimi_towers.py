"""kvcli's weights and buffers for GLM-4.1V, GLM-4.5V, Kimi-VL and Kimi-K2.5 against vLLM
0.33.0's own classes, built on the meta device at TP 1, 2, 4 and 8, every rank, alone and under
the multimodal serving options (tests/data/weights_census/glm_kimi_towers/answers.json,
recorded by record_towers.py there): the bytes a rank holds and its buffers, exactly, vision
towers and projectors included; and no uncounted-tower warning for them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.multimodal_classes import uncounted_tower_note
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import (
    case_geometry,
    case_mm,
    refused_tps,
)

DATA = Path(__file__).parent / "data" / "weights_census" / "glm_kimi_towers"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]


def _config(base: str) -> dict:
    return json.loads((DATA / f"{base}.config.json").read_text())


def _geometry(name: str, *, applied: bool = True):
    return case_geometry(DATA, CASES, name, applied=applied)


REFUSED = refused_tps(CASES)


@pytest.mark.parametrize(("name", "tp"), REFUSED)
def test_what_vllm_cannot_build_kvcli_refuses(name: str, tp: int) -> None:
    """TP 8 does not divide the GLM towers' 12 heads (vLLM: "12 is not divisible by 8"), even
    where the tower is then dropped; under --mm-encoder-tp-mode data no head is split."""
    assert len(REFUSED) == 6
    assert CASES[name]["tp"][str(tp)][0]["refused"] == "AssertionError: 12 is not divisible by 8"
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=_geometry(name, applied=False), tensor_parallel_size=tp,
                                gpu_memory_gib=80, max_model_len=4096, mm=case_mm(CASES[name]))
    assert e.value.field == "tensor_parallel_size"
    assert "12 attention heads" in e.value.message and e.value.message.endswith("got 8")


@pytest.mark.parametrize(("base", "total", "whole", "heads", "buffers"), [
    # 24 blocks 1,536 wide with a 4,096-wide gated MLP, the downsample, the merger; buffers:
    # 576 int64 position_ids and the 8,192 x 64 bfloat16 rotary cache
    ("glm-4.1v-9b-thinking", 892_498_432, 27_947_520, 12, 4_608 + 1_048_576),
    ("glm-4.5v", 858_681_856, 27_947_520, 12, 4_608 + 1_048_576),   # (merger 10,944 wide)
    # MoonViT's 27 layers and the replicated 4,608-wide projector; no buffer
    ("kimi-vl-a3b-instruct", 447_545_840, 36_265_856, 16, 0),
    # Kimi-VL's MoonViT to a 7,168-wide text model; its time_weight (4 x 1,152 in bfloat16)
    ("kimi-k2.5", 471_143_920, 59_863_936, 16, 9_216),
    # rmsnorm, qkv_hidden_size 256, no biases, patchmergerv2 over a 2 x 3 merge
    ("tiny-kimi-k2.5-flags", 3_024_704, 1_992_512, 16, 1_152),
])
def test_tower_sizes(base: str, total: int, whole: int, heads: int, buffers: int) -> None:
    """vLLM's non-language-model parameters at TP 1 (and whole: twice its TP 2 rank's less
    them): the full build less the --language-model-only one."""
    g = read_hf_config(_config(base), name=base)
    full, lmo = CASES[base]["tp"], CASES[f"{base} --language-model-only"]["tp"]
    assert total == full["1"][0]["param_numel"] - lmo["1"][0]["param_numel"]
    assert whole == 2 * (full["2"][0]["param_numel"] - lmo["2"][0]["param_numel"]) - total
    assert (g.vision_params, g.vision_whole, g.vision_heads) == (total, whole, heads)
    assert g.vision_buffers == buffers


@pytest.mark.parametrize("base", ["glm-4.1v-9b-thinking", "glm-4.5v", "kimi-vl-a3b-instruct"])
def test_no_uncounted_tower_warning(base: str) -> None:
    tp = "4" if base == "glm-4.5v" else "1"       # (GLM-4.5V's 200 GiB: 4 x 80 GiB)
    res = CliRunner().invoke(app, ["config", "--model-config", str(DATA / f"{base}.config.json"),
                                   "--gpu-memory-gib", "80", "-tp", tp, "--json"])
    assert res.exit_code == 0, res.output
    assert not [w for w in json.loads(res.stdout)["warnings"] if "multimodal tower" in w]


def test_kimi_k25_has_no_uncounted_tower_note() -> None:
    """(its 2 TB of weights fit no 80 GiB GPU at TP 8: the note itself)"""
    g = read_hf_config(_config("kimi-k2.5"), name="kimi-k2.5")
    assert g.vision_modalities == ("vision_chunk",)
    assert uncounted_tower_note(g, None, "--gpu-memory-gib", "--num-blocks") is None
