"""kvcli's Ovis (Ovis1.6, Ovis2), Ovis2.5, Ovis2.6, Eagle 2.5, OpenCUA and Kanana-V against vLLM
0.33.0's own classes, built on the meta device at TP 1, 2, 4 and 8, every rank, alone and under the
multimodal serving options (tests/data/weights_census/mm_ovis/answers.json; every built rank's bytes
and the KV specs are checked by tests/test_tower_censuses.py): the visual tokenizers and visual
embedding tables, Eagle's SigLIP and mlp1, OpenCUA's Qwen2.5-VL tower, Kanana-V's Qwen2-VL tower and
C-Abstractor, which went uncounted, and the refusals vLLM makes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.multimodal_classes import uncounted_tower_note
from kvcore.models.weights import estimate_params
from tests.census_rows import assert_config_blocks, kvcli_refusal, refused_tps

DATA = Path(__file__).parent / "data" / "weights_census" / "mm_ovis"
ANSWERS = json.loads((DATA / "answers.json").read_text())
CASES = ANSWERS["cases"]
REFUSED = refused_tps(CASES)


def _config(base: str) -> dict:
    return json.loads((DATA / f"{base}.config.json").read_text())


@pytest.mark.parametrize(("name", "tp"), REFUSED)
def test_what_vllm_cannot_build_kvcli_refuses(name: str, tp: int) -> None:
    """tiny-ovis2.6-naflex's 6 vision heads at TP 4 and 8 (still constructed when the tower is
    skipped; ``data`` falls back to weights), tiny-ovis-aimv2-bias's 5 at TP 2, 4 and 8, the
    text models' 28 and 12 heads of Ovis2-8B, Ovis2-2B, Eagle2.5-8B and OpenCUA-7B at TP 8,
    tiny-eagle2.5-select's 4 vision heads at TP 8 (its ``data`` mode builds), tiny-kanana-v's 4
    at TP 8."""
    assert {(p.values[0].split(" ")[0], p.values[1]) for p in REFUSED} == {
        ("tiny-ovis2.6-naflex", 4), ("tiny-ovis2.6-naflex", 8), ("tiny-ovis-aimv2-bias", 2),
        ("tiny-ovis-aimv2-bias", 4), ("tiny-ovis-aimv2-bias", 8), ("ovis2-8b", 8),
        ("ovis2-2b", 8), ("eagle2.5-8b", 8), ("opencua-7b", 8), ("tiny-eagle2.5-select", 8),
        ("tiny-kanana-v", 8)}
    assert "tiny-eagle2.5-select --mm-encoder-tp-mode data" not in {p.values[0] for p in REFUSED}
    assert kvcli_refusal(DATA, CASES, name, tp).field == "tensor_parallel_size"


@pytest.mark.parametrize(("base", "tower", "buffers"), [
    # SigLIP2-so400m NaViT (27 layers 1,152 wide, MLP 4,304, 1,024 positions, a Conv2d patch
    # embedding), the head 4,608 -> 65,532 and its LayerNorm, the 65,536 x 4,096 table; the
    # rotary inv_freq (18 float32)
    ("ovis2.5-9b", 984_072_424, 72),
    ("ovis2.5-2b", 849_854_696, 72),        # (the table 65,536 x 2,048)
    ("ovis2.6-30b-a3b", 849_854_696, 72),
    ("tiny-ovis2.6-naflex", 1_351_352, 16),
    ("tiny-ovis2.5-no-pe", 871_432, 16),
    # AIMv2-huge (24 blocks 1,536 wide, gated MLP 4,096, 1,024 positions, RMSNorms), the head
    # 6,144 -> 65,531 and its LayerNorm, the 65,536 x 3,584 table
    ("ovis2-8b", 1_319_664_630, 0),
    ("ovis2-2b", 679_192_566, 0),
    # SigLIP-so400m at 384 / 14 (27 layers, its post LayerNorm; 729 int64 position_ids)
    ("ovis1.6-gemma2-9b", 949_966_182, 729 * 8),
    ("tiny-ovis-aimv2-bias", 1_631_750, 0),
    # SigLIP-so400m at 448 / 14 (27 layers, post LayerNorm; 1,024 int64 position_ids), mlp1:
    # LayerNorm 4,608, 4,608 -> 3,584 -> 3,584
    ("eagle2.5-8b", 442_703_600, 1024 * 8),
    ("tiny-eagle2.5-select", 639_664, 64 * 8),    # (2 of 3 layers: no post LayerNorm)
    # Qwen2.5-VL-7B's tower and merger; its rotary cache, 8,192 x 40 bf16
    ("opencua-7b", 676_550_144, 8192 * 40 * 2),
    # Qwen2-VL's 675M ViT less its merger; the C-Abstractor (576 position rows, two stages of 3
    # RegNet blocks, the readout 1,024 -> 2,304 -> 2,304); the ViT's rotary cache
    ("kanana-1.5-v-3b", 666_043_200, 8192 * 40 * 2),
    ("tiny-kanana-v", 356_480, 8192 * 8 * 2),
])
def test_the_tower_at_tp1_is_vllms(base: str, tower: int, buffers: int) -> None:
    g = read_hf_config(_config(base))
    assert (g.vision_params, g.vision_buffers) == (tower, buffers)
    assert estimate_params(g)[0] == CASES[base]["tp"]["1"][0]["param_numel"]
    assert uncounted_tower_note(g, None, "--gpu-memory-gib", "--num-blocks") is None


def test_opencuas_text_model_has_1d_rope() -> None:
    """OpenCUA's Qwen2 text model (1-D RoPE: its cache 32,768 x 128 bf16, not MRoPE's 4 x):
    the language-model-only build's buffers, and kvcli's."""
    lm = CASES["opencua-7b --language-model-only"]["tp"]["1"][0]["buffer_bytes_by_dtype"]
    assert lm["non_persistent"] == {"bfloat16": 32768 * 128 * 2}
    g = read_hf_config(_config("opencua-7b"))
    assert (g.model_type, g.num_kv_heads, g.head_dim) == ("qwen2", 4, 128)


def test_no_tower_without_images_and_videos() -> None:
    """Ovis2.5 encodes both: an image limit of 0 alone keeps its tower, both drop it (and
    ``--language-model-only``); ``data`` holds the same bytes as TP (no such mode)."""
    def bytes_at(name: str, tp: str) -> int:
        return sum(CASES[name]["tp"][tp][0]["param_bytes_by_dtype"].values())
    base = "ovis2.5-9b"
    assert bytes_at(f"{base} --limit-mm-per-prompt {{\"image\":0}}", "2") == bytes_at(base, "2")
    assert bytes_at(f"{base} --mm-encoder-tp-mode data", "8") == bytes_at(base, "8")
    lm = bytes_at(f"{base} --language-model-only", "1")
    assert bytes_at(f"{base} --limit-mm-per-prompt {{\"image\":0,\"video\":0}}", "1") == lm
    assert bytes_at(base, "1") - lm == 984_072_424 * 2


@pytest.mark.parametrize(("base", "tp", "blocks"), [
    ("ovis2.5-9b", 1, "25,714"),            # (26,548 with the tower uncounted)
    ("ovis2.5-9b", 8, "256,755"),           # (260,988)
    ("ovis2.6-30b-a3b", 1, "10,333"),       # (11,413)
    ("ovis2-8b", 1, "66,646"),              # (69,523)
    ("ovis1.6-gemma2-9b", 2, "49,621"),     # (50,703)
    ("eagle2.5-8b", 1, "68,564"),           # (69,529)
    ("opencua-7b", 4, "326,406"),           # (327,895)
    ("kanana-1.5-v-3b", 1, "45,472"),       # (46,320)
])
def test_kvcli_config_blocks_at_80_gib(base: str, tp: int, blocks: str) -> None:
    assert_config_blocks(DATA / f"{base}.config.json", blocks, "--tensor-parallel-size", str(tp))


@pytest.mark.parametrize(("base", "change", "field"), [
    ("ovis2.5-2b", {"vit_config": {"model_type": "siglip_vision_model"}},
     "vit_config.model_type"),
    ("ovis2.5-2b", {"hidden_size": None}, "hidden_size"),
    ("ovis2.5-2b", {"visual_vocab_size": 4}, "visual_vocab_size"),
    # (ovis.py knows the image pad token of gemma2, llama and qwen2 text models only)
    ("ovis2-2b", {"llm_config": {**_config("ovis2-2b")["llm_config"], "model_type": "qwen3",
                                 "architectures": ["Qwen3ForCausalLM"]}},
     "llm_config.model_type"),
    ("ovis2-2b", {"visual_tokenizer_config": {"model_type": "clip_visual_tokenizer"}},
     "visual_tokenizer_config.model_type"),
    ("eagle2.5-8b", {"select_layer": 27}, "select_layer"),
    ("eagle2.5-8b", {"downsample_ratio": 0}, "downsample_ratio"),
])
def test_what_vllm_cannot_build_is_refused_in_one_line(base: str, change: dict,
                                                        field: str) -> None:
    with pytest.raises(InputError) as e:
        read_hf_config({**_config(base), **change}, source="config.json")
    assert e.value.field == field
