"""kvcli's weights and buffers for Llama 4, Mistral 3, the LLaVA family, PaliGemma and InternVL
(Hugging Face format) against vLLM 0.33.0's own classes, built on the meta device at TP 1, 2, 4
and 8, every rank, alone and under the multimodal serving options
(tests/data/weights_census/llava_towers/answers.json, recorded by record_towers.py there): the
bytes a rank holds and its buffers, exactly, vision towers and projectors included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import (
    case_geometry,
    case_mm,
    refused_tps,
)

DATA = Path(__file__).parent / "data" / "weights_census" / "llava_towers"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]


def _config(base: str) -> dict:
    return json.loads((DATA / f"{base}.config.json").read_text())


def _geometry(name: str, *, applied: bool = True):
    return case_geometry(DATA, CASES, name, applied=applied)


REFUSED = refused_tps(CASES)


@pytest.mark.parametrize(("name", "tp"), REFUSED)
def test_what_vllm_cannot_build_kvcli_refuses(name: str, tp: int) -> None:
    """TP 8 does not divide the 4 CLIP / SigLIP heads of the tiny LLaVA configs, nor the
    28 attention heads of Qwen2-7B (LLaVA-OneVision's and InternVL3-8B's text model); the tiny
    AWQ configs' 256-wide shards at TP 4 are not whole 128-groups."""
    assert len(REFUSED) == 17
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=_geometry(name, applied=False), tensor_parallel_size=tp,
                                gpu_memory_gib=80, max_model_len=4096, mm=case_mm(CASES[name]))
    assert e.value.field == "tensor_parallel_size"
    refused = CASES[name]["tp"][str(tp)][0]["refused"]
    words = ("The input size is not aligned with the quantized weight shape"
             if refused.startswith("ValueError") else "must be divisible by it, as vLLM requires")
    assert words in e.value.message and e.value.message.endswith(f"got {tp}")


@pytest.mark.parametrize(("base", "total", "whole", "heads"), [
    # 34 layers of 1,408 wide, the pixel-shuffle adapter, the 4,096 x 5,120 projector
    ("llama-4-scout", 871_932_416, 1_106_688, 16),
    # CLIP-L/336 cut to 23 of its 24 layers (vision_feature_layer -2), no post-norm
    ("llava-1.5-7b", 311_888_896, 1_341_440, 16),
    # Pixtral's 24 layers, Mistral 3's patch merger (1,024 x 4 in) and projector
    ("mistral-small-3.1-24b", 438_958_080, 4_847_616, 16),
    # SigLIP so400m/224 with its post-norm, the 1,152 x 2,048 projector (whole)
    ("paligemma-3b-pt-224", 414_803_696, 3_523_712, 16),
    # InternViT-300M: attention whole on every rank (no head split)
    ("internvl3-8b-hf", 331_552_768, 130_127_872, 0),
])
def test_tower_sizes(base: str, total: int, whole: int, heads: int) -> None:
    """The tower's and projector's parameters, and those whole on every rank: vLLM's
    non-language-model parameters at TP 1, and twice its TP 2 rank's less them."""
    g = read_hf_config(_config(base), name=base)
    assert (g.vision_params, g.vision_whole, g.vision_heads) == (total, whole, heads)


def test_image_newline_stays_when_the_tower_is_skipped() -> None:
    """LLaVA-NeXT's image_newline is a plain Parameter: `_mark_tower_model` drops the tower's
    modules, not it (4,096 parameters under --language-model-only)."""
    g = _geometry("llava-v1.6-mistral-7b --language-model-only")
    assert (g.vision_params, g.vision_whole, g.vision_buffers) == (4096, 4096, 0)


def test_llama4_projector_stays_split_under_data_mode() -> None:
    """Under --mm-encoder-tp-mode data the vision model is whole on every rank but the
    projector's 4,096 x 5,120 linear_1 is still column-parallel."""
    g = _geometry("llama-4-scout --mm-encoder-tp-mode data")
    assert g.vision_params - g.vision_whole == 4096 * 5120 and g.vision_heads == 0


@pytest.mark.parametrize(("base", "skips", "tower_packed"), [
    ("llama-4-scout", None, False),         # (its tower is built without the quant_config)
    ("internvl3-8b-hf", None, False),       # (its encoder and projector too)
    ("mistral-small-3.1-24b", ["vision_tower", "multi_modal_projector"], False),
    ("mistral-small-3.1-24b", ["vision_tower"], True),     # (the projector is packed)
    ("llava-1.5-7b", None, True),
])
def test_an_awq_tower_is_packed_unless_vllm_leaves_it_unquantised(base, skips,
                                                                   tower_packed) -> None:
    """AWQ packs a tower's linears unless modules_to_not_convert names them (vLLM's
    is_layer_skipped_awq, a substring match) or the class builds them without the
    quant_config (Llama 4, InternVL): sized either way (`kvcore.models.tower_int_quant`;
    census quant_towers), where it was counted all unquantised, warned."""
    from kvcore.models.int_quant_rank import unquantised_method

    quant = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}
    g = read_hf_config({**_config(base), "quantization_config": {
        **quant, **({"modules_to_not_convert": skips} if skips else {})}})
    assert unquantised_method(g) is None
    plain = read_hf_config({**_config(base), "quantization_config": {
        **quant, "modules_to_not_convert": ["vision_tower", "multi_modal_projector"]}})
    packed = estimate_weights_bytes(g, 1) < estimate_weights_bytes(plain, 1)
    assert packed == tower_packed


@pytest.mark.parametrize(("edit", "field", "words"), [
    ({"vision_feature_layer": 25}, "vision_feature_layer",
     "reads layer 25 of a vision encoder of 24 (vision_config.num_hidden_layers)"),
    ({"vision_feature_layer": [-2, "x"]}, "vision_feature_layer",
     "expected an integer or a list of integers"),
    ({"vision_config": {"model_type": "siglip2_vision_model"}}, "vision_config.model_type",
     "vLLM builds a CLIP, SigLIP or Pixtral vision tower"),
])
def test_bad_llava_keys_are_refused_in_one_line(edit: dict, field: str, words: str) -> None:
    with pytest.raises(InputError) as e:
        read_hf_config({**_config("llava-1.5-7b"), **edit}, source="c.json")
    assert (e.value.field, e.value.path) == (field, "c.json")
    assert words in e.value.message
