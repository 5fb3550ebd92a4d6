"""kvcli's towers of tests/data/weights_census/mm_towers12b/ (LLaVA-OneVision-2, ...) against
vLLM 0.33.0's own classes, built on the meta device at TP 1, 2, 4 and 8, every rank, alone and
under the multimodal serving options (every built rank's bytes and the KV specs:
tests/test_tower_censuses.py): the towers, which went uncounted (a warning), and the refusals
vLLM makes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.multimodal_classes import uncounted_tower_note
from kvcore.models.weights import estimate_params
from tests.census_rows import kvcli_refusal, refused_tps

DATA = Path(__file__).parent / "data" / "weights_census" / "mm_towers12b"
ANSWERS = json.loads((DATA / "answers.json").read_text())
CASES = ANSWERS["cases"]
REFUSED = refused_tps(CASES)


def _config(base: str) -> dict:
    return json.loads((DATA / f"{base}.config.json").read_text())


@pytest.mark.parametrize(("name", "tp"), REFUSED)
def test_what_vllm_cannot_build_kvcli_refuses(name: str, tp: int) -> None:
    """The tiny LLaVA-OneVision-2's 4 vision heads at TP 8, whatever the options; the tiny
    Isaac's 6 vision heads at TP 4 (its data mode builds there) and its text model's 4 at 8;
    the tiny EXAONE 4.5's 6 vision heads at 4 and 8 (not in the data mode); EXAONE 4.5's
    vision MLP (3,420) at TP 8, its tower dropped or not (vLLM still constructs it), not in
    the data mode; the tiny Alpamayo 2 Super's 6 vision heads at 4 and 8, the tower dropped or
    not (at 4 not in the data mode); the tiny Qianfan-OCR's text model's 4 heads at TP 8 (its
    6 vision heads at 4: InternViT's attention kept whole, built)."""
    assert sorted((p.values[0].split()[0], p.values[1]) for p in REFUSED) == [
        *[("exaone-4.5-33b", 8)] * 3, ("tiny-alpamayo2-super-flat", 4),
        ("tiny-alpamayo2-super-flat", 8), *[("tiny-alpamayo2-super-nested", 4)] * 3,
        *[("tiny-alpamayo2-super-nested", 8)] * 4, ("tiny-exaone-4.5", 4), ("tiny-exaone-4.5", 8),
        ("tiny-isaac", 4), ("tiny-isaac", 8), ("tiny-isaac", 8),
        *[("tiny-llava-onevision-2", 8)] * 3, ("tiny-qianfan-ocr", 8), ("tiny-qianfan-ocr", 8)]
    assert kvcli_refusal(DATA, CASES, name, tp).field == "tensor_parallel_size"


@pytest.mark.parametrize(("base", "tower", "buffers"), [
    # 24 ViT blocks 1,024 wide (MLP 4,096), patch 14 without bias, the 2 x 2 merger to
    # Qwen3-8B's 4,096; three float32 inv_freq tables of 32 entries in all
    ("llava-onevision-2-8b", 336_478_208, 32 * 4),
    ("tiny-llava-onevision-2", 2_052_864, 16 * 4),
    # SigLIP2 so400m/16 (27 layers 1,152 wide, MLP 4,304, 256 positions), the 2 x 2 shuffle's
    # projector (4,608 -> 18,432 -> 2,048, no biases); no buffer of its own
    ("isaac-0.1", 535_333_104, 0),
    ("tiny-isaac", 4_054_384, 0),
    # Qwen2.5-VL's tower 1,280 wide (32 blocks, 16 heads and 8 KV heads of 80, MLP 3,420), the
    # merger to 5,120; its rotary cache, 8,192 x 40 in bfloat16
    ("exaone-4.5-33b", 631_946_240, 8192 * 40 * 2),
    ("tiny-exaone-4.5", 426_400, 8192 * 8 * 2),
    # InternViT-300M (24 layers 1,024 wide, 448 / 14 patches, LayerNorms, biased QKV) and mlp1
    # over 2 x 2 pixels to Qwen3-4B's 2,560
    ("qianfan-ocr", 321_064_960, 0),
    ("tiny-qianfan-ocr", 661_280, 0),
    # Nemotron Nano VL V2's RADIO and mlp1 (861,445,120) and a Parakeet sound encoder of
    # ParakeetEncoderConfig's defaults over 128 mel bins with its projection 1,024 -> 4,096 ->
    # 5,120 (634,144,768); buffers: RADIO's 2 summary indices, Parakeet's 512 inverse
    # frequencies and 24 BatchNorms' running mean and variance in bfloat16 and counters
    ("nemotron-omni-12b-synthetic", 1_495_589_888, 16 + 512 * 2 + 24 * (2 * 1024 * 2 + 8)),
    ("tiny-nemotron-omni", 153_984 + 23_139_712, 64 + 2 * (2 * 64 * 2 + 8)),
    ("tiny-nemotron-super-omni-no-sound", 23_139_712, 0),
    # Qwen3-VL's tower (3 blocks 96 wide, 64 positions, a deepstack merger), read from the
    # released format's vlm_config as from the flat one
    ("tiny-alpamayo2-super-nested", 742_688, 8192 * 8 * 2),
    ("tiny-alpamayo2-super-flat", 742_688, 8192 * 8 * 2),
])
def test_the_tower_at_tp1_is_vllms(base: str, tower: int, buffers: int) -> None:
    g = read_hf_config(_config(base))
    assert (g.vision_params, g.vision_buffers) == (tower, buffers)
    full = CASES[base]["tp"]["1"][0]["param_numel"]
    assert estimate_params(g)[0] == full
    assert uncounted_tower_note(g, None, "--gpu-memory-gib", "--num-blocks") is None


def test_llava_onevision2_takes_no_data_mode_and_serves_video() -> None:
    """vLLM's class passes no data-parallel flag to the tower (the data mode falls back) and
    drops the tower only when the image and video limits are both 0."""
    g = read_hf_config(_config("llava-onevision-2-8b"))
    assert (g.vision_data_parallel, g.vision_modalities) == (False, ("image", "video"))
    rank = CASES["llava-onevision-2-8b --mm-encoder-tp-mode data"]["tp"]["2"][0]
    assert rank["param_numel"] == CASES["llava-onevision-2-8b"]["tp"]["2"][0]["param_numel"]


def test_a_head_dim_off_the_rotary_split_is_refused() -> None:
    cfg = _config("tiny-llava-onevision-2")
    cfg["vision_config"]["num_attention_heads"] = 8        # (a head dim of 16)
    with pytest.raises(InputError) as e:
        read_hf_config(cfg)
    assert e.value.field == "vision_config.num_attention_heads"
    assert "multiple of 32" in str(e.value)


def test_isaac_reads_qwen3_with_an_mrope_cache() -> None:
    """IsaacConfig is a Qwen3Config: q/k norms (7,168 parameters kvcli left out as model_type
    isaac); its class adds an mrope_section, so the cache holds 4 x 40,960 rows of 128."""
    g = read_hf_config(_config("isaac-0.1"))
    assert g.qk_norm and [(c.rows, c.dim) for c in g.rope_caches] == [(4 * 40960, 128)]
    rec = CASES["isaac-0.1"]["tp"]["1"][0]["buffer_bytes_by_dtype"]["non_persistent"]
    assert rec == {"bfloat16": 4 * 40960 * 128 * 2}


def test_isaac_data_mode_keeps_its_projector_split() -> None:
    g = read_hf_config(_config("isaac-0.1"))
    assert g.vision_data_parallel
    projector = 4608 * 18432 + 18432 * 2048
    assert g.vision_data_split == projector


def test_exaone4_text_model_has_its_qk_norms() -> None:
    """exaone4.py builds a q_norm and a k_norm in every layer: 16,384 parameters kvcli left
    out of EXAONE 4.5's 64 text layers (and of EXAONE 4.0's)."""
    g = read_hf_config(_config("exaone-4.5-33b"))
    lm = CASES["exaone-4.5-33b --language-model-only"]["tp"]["1"][0]["param_numel"]
    assert g.qk_norm and estimate_params(g)[0] - g.vision_params == lm


@pytest.mark.parametrize("key", ["force_image_size", "select_layer", "ps_version"])
def test_qianfan_ocr_without_the_keys_vllm_reads_is_refused(key: str) -> None:
    cfg = _config("qianfan-ocr")
    del cfg[key]
    with pytest.raises(InputError) as e:
        read_hf_config(cfg)
    assert e.value.field == key and "QianfanOCRConfig does not default it" in str(e.value)


def test_qianfan_ocr_renames_its_vision_keys_as_vllm_does() -> None:
    """The tiny config's vision keys under QianfanOCRVisionConfig's names (no QKV bias, q/k
    norms, RMSNorms, select_layer -2: two of three layers built) read as InternViT's."""
    rank = CASES["tiny-qianfan-ocr"]["tp"]["1"][0]["param_numel_by_name"]
    assert "vision_model.encoder.layers.*.attn.qkv.bias" not in rank
    assert rank["vision_model.encoder.layers.*.attn.q_norm.weight"] == 2 * 96
    assert read_hf_config(_config("tiny-qianfan-ocr")).vision_params == 661_280


def test_nemotron_omni_drops_both_encoders_only_with_every_limit_0() -> None:
    """RADIO and Parakeet are built under one tower mark: an audio limit of 0 keeps both."""
    base = "nemotron-omni-12b-synthetic"
    rank = {n: CASES[n]["tp"]["2"][0]["param_numel"] for n in CASES if n.startswith(base)}
    assert rank[f'{base} --limit-mm-per-prompt {{"audio":0}}'] == rank[base]
    assert rank[f'{base} --limit-mm-per-prompt {{"image":0,"video":0,"audio":0}}'] == rank[
        f"{base} --language-model-only"]


def test_alpamayo_keeps_its_tower_with_an_image_limit_of_0() -> None:
    """Qwen3-VL's class marks its tower image and video, whatever Alpamayo's processor takes:
    an image limit of 0 alone keeps it, as kvcli sizes it."""
    base = "tiny-alpamayo2-super-nested"
    assert CASES[f'{base} --limit-mm-per-prompt {{"image":0}}']["tp"]["1"][0][
        "param_numel"] == CASES[base]["tp"]["1"][0]["param_numel"]
    assert read_hf_config(_config(base)).vision_modalities == ("image", "video")


def test_alpamayo_vlm_config_must_be_an_object() -> None:
    cfg = {**_config("tiny-alpamayo2-super-nested"), "vlm_config": "qwen3_vl"}
    with pytest.raises(InputError) as e:
        read_hf_config(cfg)
    assert e.value.field == "vlm_config"
