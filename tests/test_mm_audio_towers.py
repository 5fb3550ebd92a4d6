"""kvcli's weights and buffers for LLaVA-NeXT-Video, MiniCPM-o and Voxtral against
vLLM 0.33.0's own classes, built on the meta device at TP 1, 2, 4 and 8, every rank, alone and
under the multimodal serving options (tests/data/weights_census/mm_audio/answers.json, recorded
by record_towers.py there; every built rank's bytes and the KV specs:
tests/test_tower_censuses.py): the towers
at TP 1, MiniCPM-o's language model by version, the refusals, and Voxtral's Hugging Face
config.json refused as vLLM refuses it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.mm_serving import apply_mm
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import case_geometry, case_mm, refused_tps, vllms_words

DATA = Path(__file__).parent / "data" / "weights_census" / "mm_audio"
ANSWERS = json.loads((DATA / "answers.json").read_text())
CASES, KV = ANSWERS["cases"], ANSWERS["kv_specs"]
TOWERS = ("llava-next-video", "minicpm-o", "tiny-llava", "tiny-minicpm", "tiny-intern")


def _config(base: str) -> dict:
    return json.loads((DATA / f"{base}.config.json").read_text())


REFUSED = [p for p in refused_tps(CASES) if p.values[0].startswith(TOWERS)]


@pytest.mark.parametrize(("name", "tp"), REFUSED)
def test_what_vllm_cannot_build_kvcli_refuses(name: str, tp: int) -> None:
    """MiniCPM-o 2.6's 28 heads at TP 8, the tiny text models' 4 at TP 8 (Intern-S1-Pro's too),
    the tiny LLaVA-NeXT-Video's 6 tower heads at TP 4 and 8 (its text model's 4 divided by 4;
    the tower is still constructed when dropped)."""
    assert len(REFUSED) == 16
    assert CASES[name]["tp"][str(tp)][0]["refused"].startswith("AssertionError")
    g = case_geometry(DATA, CASES, name, applied=False)
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=g, tensor_parallel_size=tp, gpu_memory_gib=80,
                                max_model_len=4096, mm=case_mm(CASES[name]))
    assert e.value.field == "tensor_parallel_size" and e.value.message.endswith(f"got {tp}")
    tower = name.startswith("tiny-llava") and tp == 4
    assert ("vision tower has 6 attention heads" in e.value.message) == tower


@pytest.mark.parametrize(("base", "total", "whole", "heads", "buffers"), [
    # CLIP-L/336 to 23 layers (split over TP) and the two plain nn.Linear of the projector
    # (1,024 to 4,096, 4,096 square, biased: whole); CLIP's 577 position_ids
    ("llava-next-video-7b-hf", 311_888_896, 22_317_056, 16, 4_616),
    ("llava-next-video-34b-hf", 349_643_776, 60_071_936, 16, 4_616),    # (to 7,168)
    # a 96-wide CLIP read to layer -5 of 8, no projector bias, max pooling
    ("tiny-llava-next-video-max-pool", 482_176, 185_344, 6, 1_576),
    # MiniCPM-V 2.6's NaViT and resampler (486,411,504; its 70 x 70 table) and the Whisper-
    # medium encoder with its projection (323,738,624, whole)
    ("minicpm-o-2_6", 810_150_128, 398_870_144, 16, 35_123_200),
    ("tiny-minicpm-o-4_5", 771_536, 705_360, 4, 41_881_600 // 2),
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


@pytest.mark.parametrize(("base", "image", "audio"), [
    ("minicpm-o-2_6", 486_411_504, 323_738_624), ("tiny-minicpm-o-4_5", 471_872, 299_664)])
def test_minicpmo_drops_each_tower_with_its_limits(base: str, image: int, audio: int) -> None:
    """Audio at 0 drops the Whisper encoder and projection; image and video at 0 the NaViT and
    resampler; image alone at 0 keeps them (video reads them), as vLLM does."""
    g = read_hf_config(_config(base))
    assert [(p.modalities, p.total) for p in g.vision_parts] == [
        (("image", "video"), image), (("audio",), audio)]
    full = CASES[base]["tp"]["1"][0]["param_numel"]
    for limits, dropped in (('{"audio":0}', audio), ('{"image":0,"video":0}', image)):
        assert full - CASES[f"{base} --limit-mm-per-prompt {limits}"]["tp"]["1"][0][
            "param_numel"] == dropped
    if base == "minicpm-o-2_6":
        assert CASES[f'{base} --limit-mm-per-prompt {{"image":0}}']["tp"]["1"][0][
            "param_numel"] == full


@pytest.mark.parametrize(("base", "cls", "llm"), [
    ("minicpm-o-2_6", "MiniCPMO2_6", "qwen2"), ("tiny-minicpm-o-4_5", "MiniCPMO4_5", "qwen3")])
def test_minicpmo_builds_the_language_model_of_its_version(base: str, cls: str,
                                                           llm: str) -> None:
    """2.6's Qwen2 has a biased QKV, 4.5's Qwen3 q/k norms: kvcli read model_type minicpmo
    as a plain Llama before (2.6: the QKV bias, 258,048 B at TP 1, missing)."""
    rank = CASES[base]["tp"]["1"][0]
    names = rank["param_numel_by_name"]
    g = read_hf_config(_config(base), name=base)
    assert rank["class"] == cls and g.model_type == llm
    assert g.attention_bias == ("llm.model.layers.*.self_attn.qkv_proj.bias" in names)
    assert g.qk_norm == ("llm.model.layers.*.self_attn.q_norm.weight" in names)
    assert not any(n.startswith("tts") for n in names)      # (no TTS built)


@pytest.mark.parametrize(("version", "message"), [
    ("2.5", "'2.5': vLLM's MiniCPMO supports versions 2.6, 4.5"),
    ("x.6", ("Invalid model version format in config: 'x.6'. Expected a dot-separated version "
            "string like '4.5'."))])
def test_minicpmo_versions_vllm_does_not_build_are_refused(version: str, message: str) -> None:
    with pytest.raises(InputError) as e:
        read_hf_config({**_config("tiny-minicpm-o-4_5"), "version": version},
                       source="config.json")
    assert str(e.value) == f"config.json: field 'version': {message}"


def test_llava_next_video_takes_videos_only() -> None:
    """vLLM's class marks its tower "video" (its processor takes no image): an image limit of 0
    keeps the tower, a video limit of 0 drops it; --mm-encoder-tp-mode data falls back."""
    g = read_hf_config(_config("llava-next-video-7b-hf"))
    assert g.vision_modalities == ("video",) and not g.vision_data_parallel
    full = CASES["llava-next-video-7b-hf"]["tp"]["1"][0]["param_numel"]
    for name, tower in (('{"image":0}', "built"), ('{"video":0}', "skipped")):
        case = CASES[f"llava-next-video-7b-hf --limit-mm-per-prompt {name}"]
        assert apply_mm(g, case_mm(case))[1].tower == tower
        assert (case["tp"]["1"][0]["param_numel"] == full) == (tower == "built")
    data = CASES["llava-next-video-7b-hf --mm-encoder-tp-mode data"]
    assert data["multimodal_config"]["mm_encoder_tp_mode"] == "weights"


def test_llava_next_video_pool_modes_vllm_refuses_are_refused() -> None:
    with pytest.raises(InputError) as e:
        read_hf_config({**_config("tiny-llava-next-video-max-pool"),
                        "spatial_pool_mode": "conv"}, source="config.json")
    assert e.value.field == "spatial_pool_mode"
    assert e.value.message.startswith("Unknown pooling mode: 'conv'. Expected [`average`, `max`]")


def test_voxtral_hf_config_is_refused_as_vllm_refuses_it() -> None:
    """vLLM reads audio_config.downsample_factor, which transformers' VoxtralEncoderConfig
    lacks: every TP refused, the KV-spec build too; kvcli refuses in one line (exit 2)."""
    case = CASES["voxtral-mini-3b-2507"]
    words = {vllms_words(r[0]["refused"]) for r in case["tp"].values()}
    assert words == {("AttributeError: 'VoxtralEncoderConfig' object has no attribute "
                     "'downsample_factor'")}
    assert KV["voxtral-mini-3b-2507"]["skipped"] == words.pop()
    for base in ("voxtral-mini-3b-2507", "voxtral-small-24b-2507"):
        res = CliRunner().invoke(app, ["config", "--model-config",
                                       str(DATA / f"{base}.config.json"), "--gpu-memory-gib",
                                       "80", "--language-model-only"])
        assert res.exit_code == 2 and "Traceback" not in res.output
        assert "field 'audio_config.downsample_factor': 'VoxtralEncoderConfig' object has no " \
               "attribute 'downsample_factor': vLLM cannot build" in res.output


@pytest.mark.parametrize(("base", "blocks"), [
    # (before, the towers uncounted with the warning: 7,813; 2,605; 69,528)
    ("llava-next-video-7b-hf", 7_739), ("llava-next-video-34b-hf", 2_428),
    ("minicpm-o-2_6", 67_723),
])
def test_80_gib_blocks_without_the_uncounted_tower_warning(base: str, blocks: int) -> None:
    res = CliRunner().invoke(app, ["config", "--model-config", str(DATA / f"{base}.config.json"),
                                   "--gpu-memory-gib", "80", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["num_blocks"] == blocks
    assert not [w for w in doc["warnings"] if "multimodal tower" in w]


VOXTRAL = ("voxtral-mini-3b-2507-downsample", "voxtral-small-24b-2507-downsample",
           "tiny-voxtral-downsample")


@pytest.mark.parametrize(("base", "tower", "fp32", "buffers", "blocks"), [
    # (80 GiB blocks before, the tower uncounted with the warning: 36,094; 12,149; 4,823,209)
    ("voxtral-mini-3b-2507-downsample", 660_255_744, 1_920_000, 102_912, 35_419),
    ("voxtral-small-24b-2507-downsample", 687_518_720, 1_920_000, 102_912, 11_621),
    ("tiny-voxtral-downsample", 303_808, 28_800, 24_160, 4_823_163),
])
def test_voxtral_with_downsample_factor_counts_its_whisper_encoder(
        base: str, tower: int, fp32: int, buffers: int, blocks: int) -> None:
    """vLLM's own WhisperEncoder (k biased, split over TP), its position table float32 whatever
    the model dtype, the mel filter bank a float32 buffer, and the bias-free adapter."""
    g = read_hf_config(_config(base), name=base)
    assert (g.vision_params, g.vision_fp32, g.vision_buffers) == (tower, fp32, buffers)
    assert g.vision_modalities == ("audio",) and g.vision_heads == (6 if "tiny" in base else 20)
    res = CliRunner().invoke(app, ["config", "--model-config", str(DATA / f"{base}.config.json"),
                                   "--gpu-memory-gib", "80", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert (doc["num_blocks"], doc["warnings"]) == (blocks, [])


@pytest.mark.parametrize(("name", "tp"), [p for p in refused_tps(CASES)
                                          if p.values[0].startswith(VOXTRAL)])
def test_voxtral_tp_not_dividing_its_encoder_heads_is_refused(name: str, tp: int) -> None:
    """vLLM's WhisperAttention asserts TP divides encoder_attention_heads (20: TP 8; the tiny
    one's 6: TP 4 and 8, where kvcli names its text model's 4 heads first), the encoder
    constructed even when dropped."""
    assert vllms_words(CASES[name]["tp"][str(tp)][0]["refused"]) == "AssertionError: "
    g = case_geometry(DATA, CASES, name, applied=False)
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=g, tensor_parallel_size=tp, gpu_memory_gib=80,
                                max_model_len=4096, mm=case_mm(CASES[name]))
    base, heads = name.split(" ")[0], 6 if name.startswith("tiny") else 20
    said = f"vision tower has {heads} attention heads," if heads != 6 or tp == 4 else "4 atten"
    assert e.value.message.startswith(f"{base}'s {said}")
    assert e.value.message.endswith(f"must be divisible by it, as vLLM requires; got {tp}")


@pytest.mark.parametrize(("drop", "field"), [
    ("window_size", "audio_config.window_size"), ("sampling_rate", "audio_config.sampling_rate")])
def test_voxtral_without_what_its_encoder_reads_is_refused(drop: str, field: str) -> None:
    cfg = _config("tiny-voxtral-downsample")
    cfg["audio_config"] = {k: v for k, v in cfg["audio_config"].items() if k != drop}
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="config.json")
    assert e.value.field == field
    assert e.value.message.startswith(f"'VoxtralEncoderConfig' object has no attribute '{drop}'")


def test_voxtral_causal_encoder_is_left_uncounted() -> None:
    cfg = _config("tiny-voxtral-downsample")
    cfg["audio_config"]["is_causal"] = True
    assert read_hf_config(cfg, source="config.json").vision_params == 0
