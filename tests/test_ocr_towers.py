"""kvcli's OCR models (dots.ocr, PaddleOCR-VL, DeepSeek-OCR and -OCR-2, GLM-OCR) against vLLM
0.33.0's own classes, built on the meta device at TP 1, 2, 4 and 8, every rank, alone and under the
multimodal serving options (tests/data/weights_census/mm_ocr/answers.json; every built rank's bytes
and the KV specs are checked by tests/test_tower_censuses.py): the towers, which went uncounted
(DeepSeek-OCR's language model refused), the language models' readings that were wrong, and the
refusals vLLM makes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.models.drafts import load_spec_draft
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_params
from tests.census_rows import assert_config_blocks, built_ranks, kvcli_refusal, refused_tps

DATA = Path(__file__).parent / "data" / "weights_census" / "mm_ocr"
ANSWERS = json.loads((DATA / "answers.json").read_text())
CASES = ANSWERS["cases"]
REFUSED = refused_tps(CASES)
MTP = json.loads((DATA / "mtp" / "answers.json").read_text())["cases"]


def _config(base: str) -> dict:
    return json.loads((DATA / f"{base}.config.json").read_text())


@pytest.mark.parametrize(("name", "tp"), REFUSED)
def test_what_vllm_cannot_build_kvcli_refuses(name: str, tp: int) -> None:
    """dots.ocr's 12 heads at TP 8, DeepSeek-OCR's 10 at TP 4 and 8, the tiny configs' 4
    heads at TP 8 (tiny dots.ocr's data-mode tower builds there: its text model has 8)."""
    assert len(REFUSED) == 20 and {p.values[1] for p in REFUSED} == {4, 8}
    assert "tiny-dots-ocr --mm-encoder-tp-mode data" not in {p.values[0] for p in REFUSED}
    assert kvcli_refusal(DATA, CASES, name, tp).field == "tensor_parallel_size"


@pytest.mark.parametrize(("base", "tower", "buffers", "kept"), [
    # 42 blocks 1,536 wide (gated MLP 4,224, no biases), the merger to 1,536; inv_freq
    ("dots-ocr", 1_262_091_264, 32 * 4, 0),
    # SigLIP so400m (27 layers 1,152 wide, 729 positions), the 2 x 2 projector to 1,024;
    # 729 int64 position_ids and an 18-entry float32 inv_freq
    ("paddleocr-vl", 438_947_440, 729 * 8 + 18 * 4, 0),
    # SAM ViT-B, CLIP-L/14 (257 int64 position_ids), the linear projector 2,048 -> 1,280 and
    # the two separators, which vLLM keeps when it drops the tower
    ("deepseek-ocr", 401_372_160, 257 * 8, 2 * 1280),
    # SAM ViT-B, the Qwen2 encoder (its two float32 inverse frequency tables), 896 -> 1,280
    ("deepseek-ocr-2", 454_385_280, 2 * 32 * 4, 1280),
    # 24 blocks 1,024 wide (q/k norms, biases, MLP 4,096), the downsample and the merger to
    # 1,536 (its MLP the text model's 4,608); the rotary cache, 8,192 x 32 in bfloat16
    ("glm-ocr", 434_120_192, 8192 * 32 * 2, 0),
])
def test_the_tower_at_tp1_is_vllms(base: str, tower: int, buffers: int, kept: int) -> None:
    g = read_hf_config(_config(base))
    assert (g.vision_params, g.vision_buffers) == (tower, buffers)
    lm = CASES[f"{base} --language-model-only"]["tp"]["1"][0]["param_numel"]
    full = CASES[base]["tp"]["1"][0]["param_numel"]
    assert estimate_params(g)[0] == full and full - lm == tower - kept


def test_dots_ocr_reads_its_qwen2_language_model() -> None:
    """DotsOCRConfig is a Qwen2Config and vLLM builds Qwen2ForCausalLM: its QKV bias is there
    whatever ``attention_bias`` says (the tiny config gives none: 768 parameters short)."""
    cfg = _config("tiny-dots-ocr")
    assert "attention_bias" not in cfg and read_hf_config(cfg).attention_bias


def test_paddleocr_vl_ties_its_head_whatever_the_flag() -> None:
    """PaddleOCRVLConfig moves a flat config's tie_word_embeddings into its text config and
    keeps its own default (true), which vLLM copies back: no lm_head (105,906,176 parameters
    kvcli counted), and ERNIE's MRoPE cache at 4 x the positions (134,217,728 B)."""
    cfg = _config("paddleocr-vl")
    assert cfg["tie_word_embeddings"] is False
    assert read_hf_config(cfg).tie_word_embeddings
    rec = CASES["paddleocr-vl --language-model-only"]["tp"]["1"][0]
    assert rec["buffer_bytes_by_dtype"]["non_persistent"]["bfloat16"] == 4 * 131072 * 128 * 2


def test_deepseek_ocr_reads_its_language_config() -> None:
    """Refused before for a missing num_hidden_layers: its DeepSeek-V2 MoE text model is the
    language_config (plain attention: qk_nope_head_dim and qk_rope_head_dim 0)."""
    g = read_hf_config(_config("deepseek-ocr"))
    assert (g.num_layers, g.num_kv_heads, g.head_dim, g.mla) == (12, 10, 128, None)


@pytest.mark.parametrize(("base", "tp", "blocks"), [
    ("dots-ocr", 1, "158,943"),         # 164,445 before: the tower uncounted
    ("paddleocr-vl", 1, "262,091"),     # 264,690 before
    ("deepseek-ocr", 1, "73,601"),      # refused before
    ("deepseek-ocr-2", 2, "152,955"),   # refused before
    # 74,050 before: the tower, GLM-4's two sandwich norms a layer and MRoPE's 4 x cache left out
    ("glm-ocr", 1, "73,125"),
])
def test_kvcli_config_sizes_them(base: str, tp: int, blocks: str) -> None:
    assert_config_blocks(DATA / f"{base}.config.json", blocks, "--tensor-parallel-size", str(tp))


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(MTP))
def test_glm_ocr_mtp_draft_bytes_equal_vllms(name: str, tp: int, rank: int) -> None:
    """GLM-OCR's MTP module (GlmOcrMTP: eh_proj, enorm, hnorm, shared_head.norm and a dense
    Glm4DecoderLayer, its embedding and LM head the target's), which kvcli refused as "vLLM
    0.33 refuses it": 70,800,384 B at TP 1; the tiny target's 4 heads refuse TP 8."""
    target = read_hf_config(_config(name))
    rec = MTP[name]["tp"][str(tp)][rank]
    assert load_spec_draft(None, "mtp", target).weights_bytes(tp) == sum(
        rec["param_bytes_by_dtype"].values())
    assert MTP["glm-ocr"]["tp"]["1"][0]["param_bytes_by_dtype"] == {"bfloat16": 70_800_384}
    assert "refused" in MTP["tiny-glm-ocr"]["tp"]["8"][0]
