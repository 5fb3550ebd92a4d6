"""kvcli's audio towers for Ultravox, Qwen3-ASR, Audio Flamingo 3, GLM-ASR, Granite Speech and
MiDashengLM against vLLM 0.33.0's own classes, built on the meta device at TP 1, 2, 4 and 8,
every rank, alone and under the multimodal serving options
(tests/data/weights_census/mm_audio2/answers.json, recorded by record_towers.py there; every
built rank's bytes and the KV specs: tests/test_tower_censuses.py): the towers at TP 1, the
refusals (an Ultravox config naming its models by Hub id, the TP sizes vLLM cannot build)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import case_geometry, case_mm, refused_tps

DATA = Path(__file__).parent / "data" / "weights_census" / "mm_audio2"
ANSWERS = json.loads((DATA / "answers.json").read_text())
CASES = ANSWERS["cases"]


def _config(base: str) -> dict:
    return json.loads((DATA / f"{base}.config.json").read_text())


@pytest.mark.parametrize(("base", "total", "whole", "heads", "buffers"), [
    # whisper-large-v3-turbo's encoder (split over TP but its convolutions, positions, norms and
    # row biases) and the v0.5 projector: 10,240 x 4,096, 2,048 x the text width, RMSNorms
    ("ultravox-v0_5-llama-3_1-8b-inline", 687_353_856, 57_921_536, 20, 0),
    ("ultravox-v0_5-llama-3_2-1b-inline", 683_159_552, 53_727_232, 20, 0),
    ("tiny-ultravox-transformer-projector", 200_320, 67_968, 8, 0),
    # Qwen3-Omni's encoder, its float32 sinusoid table 1,500 x d_model a buffer (the 0.6B's
    # 14 heads: whole at TP 4 and 8, the census's bytes check)
    ("qwen3-asr-1_7b", 317_477_504, 15_315_584, 0, 6_144_000),
    ("qwen3-asr-0_6b", 186_376_192, 12_855_040, 0, 5_376_000),
    # transformers' Qwen2-Audio encoder and the two-linear projector: whole
    ("audio-flamingo-3-hf", 654_408_704, 654_408_704, 0, 0),
    # vLLM's GLM-ASR encoder and projector (split), its inv_freq (16 float32)
    ("glm-asr-nano-2512", 664_456_192, 5_659_648, 20, 64),
    # the conformer (its feed-forward and CTC head split) and the Q-Former projector (whole);
    # each BatchNorm1d's running mean and variance (2 x 2,048 bfloat16) and int64 step count
    ("granite-speech-3_3-8b", 477_965_660, 208_686_080, 0, 131_200),
    ("granite-speech-3_3-2b", 475_866_460, 206_586_880, 0, 131_200),
    # the Dasheng ViT (split but its norms, position tables, patch embedding and row biases)
    # and the subsampling projector; its Hann window, mel filter bank (257 x 64) and BatchNorm
    # statistics in bfloat16, the BatchNorm's int64 step count
    ("midashenglm-7b", 666_123_392, 904_832, 16, 34_184),
    ("tiny-midashenglm-layer-scale", 193_312, 4_320, 4, 1_256),
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


REFUSED = refused_tps({n: c for n, c in CASES.items() if "tp" in c})


@pytest.mark.parametrize(("name", "tp"), REFUSED)
def test_what_vllm_cannot_build_kvcli_refuses(name: str, tp: int) -> None:
    """The encoders' 20 heads (Ultravox's, GLM-ASR's) at TP 8, Granite Speech's CTC head (348
    at TP 8, the tiny one's 42 at TP 4 and 8, even with the tower dropped: vLLM constructs
    it), the tiny text models' heads."""
    assert CASES[name]["tp"][str(tp)][0]["refused"].startswith("AssertionError")
    g = case_geometry(DATA, CASES, name, applied=False)
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=g, tensor_parallel_size=tp, gpu_memory_gib=80,
                                max_model_len=4096, mm=case_mm(CASES[name]))
    assert e.value.field == "tensor_parallel_size" and e.value.message.endswith(f"got {tp}")


def test_ultravox_named_by_hub_id_is_refused_in_one_line() -> None:
    """vLLM reads the text model's config from the Hub (refused offline); kvcli says why."""
    assert "meta-llama/Llama-3.1-8B-Instruct" in CASES["ultravox-v0_5-llama-3_1-8b"]["refused"]
    path = DATA / "ultravox-v0_5-llama-3_1-8b.config.json"
    out = CliRunner().invoke(app, ["config", "--model-config", str(path)])
    assert out.exit_code == 2
    line = out.output.strip()
    assert "\n" not in line and "field 'text_model_id'" in line
    assert "text_model_id 'meta-llama/Llama-3.1-8B-Instruct'" in line


@pytest.mark.parametrize("base", ["ultravox-v0_5-llama-3_1-8b-inline", "qwen3-asr-1_7b",
                                  "audio-flamingo-3-hf", "glm-asr-nano-2512",
                                  "granite-speech-3_3-8b", "midashenglm-7b"])
def test_no_uncounted_tower_warning(base: str) -> None:
    out = CliRunner().invoke(app, ["config", "--model-config", str(DATA / f"{base}.config.json"),
                                   "--gpu-memory-gib", "80"])
    assert out.exit_code == 0, out.output
    assert "is not counted" not in out.output
