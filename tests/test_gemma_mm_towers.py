"""Gemma 3n's, Gemma 4's and LFM2-VL's multimodal classes against vLLM 0.33's own, built on the
meta device at TP 1, 2, 4 and 8, every rank (tests/data/weights_gemma_mm/answers.json,
record_towers.py there): their towers' and embedders' parameters and buffers, the whole model's
bytes, the per-layer-embedding scratch, under the multimodal serving options too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.buffers import estimate_buffer_bytes
from kvcore.models.fp8_vision import tower_rank
from kvcore.models.hf_config import read_hf_config
from kvcore.models.mm_serving import apply_mm
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.tp_refusals import refuse_tp
from tests.census_rows import built_ranks, case_mm

DATA = Path(__file__).parent / "data"
ANSWERS = json.loads((DATA / "weights_gemma_mm" / "answers.json").read_text())
CASES = ANSWERS["cases"]
CONFIGS = json.loads((DATA / "weights_gemma_mm" / "configs.json").read_text())["configs"]
PLAN = json.loads((DATA / "sched_gemma" / "planning.json").read_text())
LM = "language_model"


def config(base: str) -> dict:
    """The case's config.json, as record_towers.py writes it."""
    spec = CONFIGS[base]
    t = spec["text"]
    text = (json.loads((DATA / t["file"]).read_text()) if "file" in t else t["inline"]
            if "inline" in t else {k: v for k, v in PLAN[t["from"]]["config"].items()
                                   if k != "architectures"})
    return {**{k: v for k, v in spec.items() if k != "text"}, "text_config": text}


def geometry(name: str):
    return apply_mm(read_hf_config(config(name.split(" ")[0])), case_mm(CASES[name]))[0]


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES))
def test_towers_per_rank_equal_vllms(name: str, tp: int, rank: int) -> None:
    rec = CASES[name]["tp"][str(tp)][rank]
    g = geometry(name)
    towers = {k: v for k, v in rec["params"].items() if k != LM}
    plain, fp8, scales = tower_rank(g, tp)
    assert (plain, fp8, scales) == (sum(v["numel"] for v in towers.values()), 0, 0)
    every = sum(sum(v["bytes_by_dtype"].values()) for v in rec["params"].values())
    assert estimate_weights_bytes(g, tp) == every
    bufs = sum(sum(v.values()) for k, v in rec["buffers"].items() if k != LM)
    assert (g.vision_buffers if g.vision_params else 0) == bufs
    assert estimate_buffer_bytes(g, tp) == sum(sum(v.values()) for v in rec["buffers"].values())
    assert apply_mm(g, case_mm(CASES[name]))[1].mode == CASES[name]["multimodal_config"][
        "mm_encoder_tp_mode"]
    if not rec["plain_tensors"]:         # (LFM2-VL)
        assert g.ple_scratch_width == 0
        return
    (shape, dtype), = rec["plain_tensors"].values()
    # (the per-layer embeddings' scratch, sized by max_num_batched_tokens, with the buffers)
    scratch = estimate_buffer_bytes(g, tp, batched_tokens=rec[
        "scheduler_max_num_batched_tokens"]) - estimate_buffer_bytes(g, tp)
    assert scratch == shape[0] * shape[1] * shape[2] * 2 and dtype == g.dtype


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if any(
    "refused" in r for ranks in c["tp"].values() for r in ranks)))
def test_a_tp_vllm_refuses_is_refused(name: str) -> None:
    """LFM2-VL's SigLIP2 splits its heads: 12 over 8 ranks is vLLM's assertion."""
    g = geometry(name)
    for tp, ranks in CASES[name]["tp"].items():
        if "refused" in ranks[0]:
            assert ranks[0]["refused"].startswith("AssertionError")
            with pytest.raises(InputError) as e:
                refuse_tp(g, int(tp), False)
            assert str(e.value) == (
                "field 'tensor_parallel_size': lfm2_vl's vision tower has 12 attention heads, "
                "which must be divisible by it, as vLLM requires; got 8")
        else:
            refuse_tp(g, int(tp), False)


def test_the_published_towers_sizes() -> None:
    """Gemma 3n E4B's MobileNetV5 (timm's table) and Conformer, Gemma 4's towers (its config
    classes' defaults), as vLLM holds them on one rank."""
    rec = CASES["gemma3n-e4b"]["tp"]["1"][0]["params"]
    assert rec["vision_tower"]["numel"] == 294_126_912
    assert rec["audio_tower"]["numel"] == 681_348_640
    g = geometry("gemma3n-e4b")
    assert [(p.modalities, p.total) for p in g.vision_parts] == [
        (("image",), 298_587_456), (("audio",), 684_694_048)]
    g4 = geometry("gemma4")
    assert [(p.modalities, p.total) for p in g4.vision_parts] == [
        (("image", "video"), 169_134_080), (("audio",), 308_363_552)]


def test_a_tower_whose_limits_are_zero_is_dropped_alone() -> None:
    g = geometry("gemma4 --limit-mm-per-prompt {\"image\":0}")
    assert g.vision_params == 169_134_080 + 308_363_552       # (video still takes the tower)
    g = geometry("gemma4 --limit-mm-per-prompt {\"image\":0,\"video\":0}")
    assert g.vision_params == 308_363_552 and g.vision_buffers == 2008
    g = geometry("gemma3n-e4b --limit-mm-per-prompt {\"audio\":0}")
    assert g.vision_params == 298_587_456 and g.vision_buffers == 0
    g = geometry("gemma3n-e4b --language-model-only")
    assert g.vision_params == 0 and g.ple_scratch_width == 35 * 256


def test_configs_vllm_cannot_build_or_kvcli_cannot_count_are_refused() -> None:
    cfg = config("gemma4")
    with pytest.raises(InputError) as e:
        read_hf_config({**cfg, "vision_config": None}, source="config.json")
    assert e.value.field == "vision_config"
    cfg = config("gemma3n-e4b")
    cfg["vision_config"] = {"architecture": "mobilenetv5_base"}
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="config.json")
    assert str(e.value) == (
        "config.json: field 'vision_config.architecture': 'mobilenetv5_base' (model_args "
        "None): kvcli counts timm's mobilenetv5_300m_enc only (as vLLM builds it)")
