"""Nemotron Nano VL V2 (`NemotronH_Nano_VL_V2`): its RADIO tower and projector as kvcli counts
them, beside what tests/test_tower_censuses.py checks on every rank against vLLM 0.33.0's own
class (tests/data/weights_census/mm_nemo/): the published checkpoint's tower at TP 1, the
80 GiB blocks, the options vLLM takes or ignores, and the configs vLLM cannot build, refused in
one line naming the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config

DATA = Path(__file__).parent / "data" / "weights_census" / "mm_nemo"
NANO = "nvidia-nemotron-nano-12b-v2-vl-bf16"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]


def _config(base: str = NANO) -> dict:
    return json.loads((DATA / f"{base}.config.json").read_text())


def _config_doc(path: Path, *args: str) -> dict:
    res = CliRunner().invoke(app, ["config", "--model-config", str(path),
                                   "--gpu-memory-gib", "80", "--json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_the_published_tower_is_vllms() -> None:
    """C-RADIOv2-H (ViT-H/16: 32 layers, 1,280 wide; 128 x 128 positions; 4 teachers' class
    tokens and 4 registers) and mlp1 (5,120 -> 20,480 -> 5,120): 861,445,120 parameters, the
    difference vLLM's class makes with and without the tower; two summary teachers' indices."""
    g = read_hf_config(_config())
    whole, lm_only = (CASES[n]["tp"]["1"][0]["param_numel"]
                      for n in (NANO, f"{NANO} --language-model-only"))
    assert g.vision_params == whole - lm_only == 861_445_120
    assert g.vision_modalities == ("image", "video", "audio")
    assert g.vision_buffers == 16


@pytest.mark.parametrize(("tp", "blocks"), [
    # (before, the tower uncounted with the warning: 1,687; 4,138; 9,040; 18,843)
    (1, 1_633), (2, 4_070), (4, 8_943), (8, 18_689)])
def test_80_gib_blocks_without_the_uncounted_tower_warning(tp: int, blocks: int) -> None:
    doc = _config_doc(DATA / f"{NANO}.config.json", "--tensor-parallel-size", str(tp))
    assert doc["num_blocks"] == blocks
    assert not [w for w in doc["warnings"] if "multimodal tower" in w]


def test_data_mode_falls_back_to_weights_as_vllm_does() -> None:
    """vLLM records mm_encoder_tp_mode "weights" for the data case: the class does not take it."""
    assert CASES[f"{NANO} --mm-encoder-tp-mode data"]["multimodal_config"][
        "mm_encoder_tp_mode"] == "weights"
    doc = _config_doc(DATA / f"{NANO}.config.json", "--mm-encoder-tp-mode", "data")
    assert doc["num_blocks"] == 1_633
    assert any("data: nvidia/NVIDIA-Nemotron-Nano-12B-v2-VL-BF16's class does not support it"
               in w for w in doc["warnings"])


def test_a_sound_config_without_what_vllm_reads_is_refused(tmp_path: Path) -> None:
    """A Parakeet sound encoder (``sound_config``) is counted since
    (`kvcore.models.parakeet_sound`, tests/test_towers12b.py); one without the keys vLLM's
    ParakeetConfig takes without a default cannot be built: refused in one line."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**_config(), "sound_config": {"hidden_size": 1024}}))
    res = CliRunner().invoke(app, ["config", "--model-config", str(path),
                                   "--gpu-memory-gib", "80"])
    assert res.exit_code == 2
    assert "sound_config.projection_hidden_size" in res.output
    assert "ParakeetConfig takes it without a default" in res.output


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"args": {"model": "vit_giant_patch14_224"}}, "vision_config.args.model",
     "'vit_giant_patch14_224': vLLM's RADIO tower is built for vit_small_patch16_224, "),
    ({"video_temporal_patch_size": 2, "separate_video_embedder": False},
     "vision_config.separate_video_embedder", "false with video_temporal_patch_size > 1"),
    ({"args": {"model": "vit_huge_patch16_224", "teachers": ["clip"]}},
     "vision_config.args.teachers", "expected a list of objects with a name, got ['clip']"),
    ({"patch_size": 0}, "vision_config.patch_size", "expected an integer >= 1, got 0"),
])
def test_what_vllm_cannot_build_is_refused(change: dict, field: str, words: str) -> None:
    cfg = _config()
    cfg["vision_config"] = {**cfg["vision_config"], **change}
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, name="x.json")
    assert e.value.field == field
    assert e.value.message.startswith(words)


def test_a_downsample_ratio_out_of_range_is_refused() -> None:
    with pytest.raises(InputError) as e:
        read_hf_config({**_config(), "downsample_ratio": 0}, name="x.json")
    assert (e.value.field, e.value.message) == ("downsample_ratio",
                                                "expected a number in (0, 1], got 0")
