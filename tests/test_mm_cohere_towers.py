"""kvcli's Command A Vision, Aria, BLIP-2 and LightOnOCR against vLLM 0.33.0's own classes,
built on the meta device at TP 1, 2, 4 and 8, every rank, alone and under the multimodal
serving options (tests/data/weights_census/mm_cohere/answers.json; every built rank's bytes
are checked by tests/test_tower_censuses.py): their towers, which went uncounted with a
warning, Aria's shared experts, which kvcli missed, and the refusals vLLM makes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_params
from tests.census_rows import assert_config_blocks, kvcli_refusal, refused_tps, vllms_words

DATA = Path(__file__).parent / "data" / "weights_census" / "mm_cohere"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
REFUSED = refused_tps({n: c for n, c in CASES.items() if "refused" not in c})


def _config(base: str) -> dict:
    return json.loads((DATA / f"{base}.config.json").read_text())


@pytest.mark.parametrize(("name", "tp"), REFUSED)
def test_what_vllm_cannot_build_kvcli_refuses(name: str, tp: int) -> None:
    """Aria's 20 text heads and the tiny configs' 4 vision heads at TP 8 (the tower is still
    constructed where it is skipped; no class here takes ``data``: it falls back to weights)."""
    assert len(REFUSED) == 13 and {p.values[1] for p in REFUSED} == {8}
    assert kvcli_refusal(DATA, CASES, name, tp, max_model_len=2048).field == "tensor_parallel_size"


@pytest.mark.parametrize(("base", "tower", "kept", "buffers"), [
    # SigLIP so400m/512 (27 layers, post-norm) and the SwiGLU projector (4,608 -> 2 x 18,432
    # -> 12,288); 1,024 int64 position_ids
    ("command-a-vision", 809_945_328, 0, 1024 * 8),
    # Pixtral (24 layers 1,024 wide), Mistral 3's merger and projector to 1,024; the tower's
    # 256 B of float32 buffers
    ("lightonocr-1b", 409_597_952, 0, 256),
    # NaViT 27 layers 1,152 wide without its post-norm, the cross-attention projector
    ("aria", 438_217_072, 0, 0),
    # EVA ViT-g (39 layers 1,408 wide), the 12-layer Q-Former, its 32 x 768 query_tokens
    # (kept where vLLM skips the tower) and the projection to 2,560
    ("blip2-opt-2.7b", 1_093_083_136, 32 * 768, 0),
    # SigLIP 27 layers without post-norm, 8 window Q-Former projectors (4 deepstack, 4
    # spatial) and image_newline (kept); 576 int64 position_ids
    ("granite4-vision-synthetic", 579_126_768, 2560, 576 * 8),
])
def test_the_tower_at_tp1_is_vllms(base: str, tower: int, kept: int, buffers: int) -> None:
    g = read_hf_config(_config(base))
    assert (g.vision_params, g.vision_kept, g.vision_buffers) == (tower, kept, buffers)
    lm = CASES[f"{base} --language-model-only"]["tp"]["1"][0]["param_numel"]
    built = CASES[base]["tp"]["1"][0]["param_numel"]
    assert estimate_params(g)[0] - tower + kept == lm == built - tower + kept


def test_arias_shared_experts_are_counted() -> None:
    """aria.py's AriaTextMoELayer: one LlamaMLP of intermediate_size x moe_num_shared_experts
    (1,664 x 2) a layer beside the 64 experts, 715,653,120 parameters kvcli missed."""
    g = read_hf_config(_config("aria"))
    assert (g.num_experts, g.moe_intermediate_size, g.shared_expert_width) == (64, 1664, 3328)
    cfg = _config("tiny-aria")
    del cfg["text_config"]["moe_num_shared_experts"]      # (AriaTextConfig's default: 2)
    assert read_hf_config(cfg).shared_expert_width == 256


def test_lightonocr_on_transformers_config_is_refused_as_vllm_refuses_it() -> None:
    """transformers' own lighton_ocr config lacks the Mistral 3 keys vLLM's class reads."""
    assert vllms_words(CASES["tiny-lightonocr-hf"]["refused"]) == (
        "AttributeError: 'LightOnOcrConfig' object has no attribute 'vision_feature_layer'")
    with pytest.raises(InputError) as e:
        read_hf_config(_config("tiny-lightonocr-hf"), source="config.json")
    assert str(e.value) == (
        "config.json: field 'vision_feature_layer': missing: vLLM 0.33's LightOnOCR reads it, "
        "which transformers' LightOnOcrConfig does not define ('LightOnOcrConfig' object has "
        "no attribute 'vision_feature_layer')")


def test_granite4_vision_deepstack_and_head() -> None:
    """Granite4VisionConfig's tie_word_embeddings (false) wins over its text config's, and the
    class allocates a scratch a deepstack level (the map's 4 and the 4 spatial targets)."""
    g = read_hf_config(_config("granite4-vision-synthetic"))
    assert (g.tie_word_embeddings, g.vision_deepstack) == (False, 8)
    cfg = _config("tiny-granite4-vision")
    cfg["deepstack_layer_map"] = None       # (the config class's default: vLLM fails on it)
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="config.json")
    assert str(e.value) == ("config.json: field 'deepstack_layer_map': expected a list, got "
                            "None: vLLM 0.33's Granite 4 Vision takes its length")


@pytest.mark.parametrize(("base", "tp", "blocks"), [
    # before: 89,507, 171,593, 58,355, 59,275 (the tower and Aria's shared experts
    # uncounted)
    ("command-a-vision", 4, "87,949"),
    ("lightonocr-1b", 4, "171,131"),
    ("aria", 4, "57,829"),
    ("blip2-opt-2.7b", 4, "58,733"),
    # (before: 235,928; the head untied as vLLM builds it, and 8 deepstack levels of scratch)
    ("granite4-vision-synthetic", 4, "233,627"),
])
def test_kvcli_config_sizes_them(base: str, tp: int, blocks: str) -> None:
    assert_config_blocks(DATA / f"{base}.config.json", blocks, "--tensor-parallel-size", str(tp))
