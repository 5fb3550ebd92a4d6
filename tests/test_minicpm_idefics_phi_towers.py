"""kvcli's weights and buffers for MiniCPM-V, Idefics3 / SmolVLM and Phi-3.5-vision
against vLLM 0.33.0's own classes, built on the meta device at TP 1, 2, 4 and 8, every rank,
alone and under the multimodal serving options
(tests/data/weights_census/mm_minicpm_idefics_phi/answers.json, recorded by record_towers.py
there): the bytes a rank holds and its buffers, exactly, towers and projectors included; the
language model each MiniCPM-V version builds; and no uncounted-tower warning for them (the KV
specs: tests/test_tower_censuses.py)."""

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

DATA = Path(__file__).parent / "data" / "weights_census" / "mm_minicpm_idefics_phi"
ANSWERS = json.loads((DATA / "answers.json").read_text())
CASES, KV = ANSWERS["cases"], ANSWERS["kv_specs"]


def _config(base: str) -> dict:
    return json.loads((DATA / f"{base}.config.json").read_text())


def _geometry(name: str, *, applied: bool = True):
    return case_geometry(DATA, CASES, name, applied=applied)


def test_every_config_has_its_kv_specs() -> None:
    """(its ranks, parameters and coverage: tests/test_tower_censuses.py)"""
    assert {n.split(" ")[0] for n in CASES} == set(KV)


REFUSED = refused_tps(CASES)


@pytest.mark.parametrize(("name", "tp"), REFUSED)
def test_what_vllm_cannot_build_kvcli_refuses(name: str, tp: int) -> None:
    """A head count TP does not divide: the text model's (MiniCPM-V 2.6's 28, SmolVLM-256M's
    9) or the tower's (the tiny SmolVLM's 6 at TP 4, with its text model's 4 divided)."""
    assert len(REFUSED) == 23
    assert CASES[name]["tp"][str(tp)][0]["refused"].startswith("AssertionError")
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=_geometry(name, applied=False), tensor_parallel_size=tp,
                                gpu_memory_gib=80, max_model_len=4096, mm=case_mm(CASES[name]))
    assert e.value.field == "tensor_parallel_size" and e.value.message.endswith(f"got {tp}")
    vision = name.startswith("tiny-smolvlm") and tp == 4
    assert ("vision tower has 6 attention heads" in e.value.message) == vision


@pytest.mark.parametrize(("base", "total", "whole", "heads", "buffers"), [
    # so400m at 980 px (27 layers) with the resampler to 3,584: 64 queries, a kv_proj, the
    # attention, three norms, proj; its 70 x 70 sin-cos table in bfloat16
    ("minicpm-v-2_6", 486_411_504, 75_131_520, 16, 35_123_200),
    ("minicpm-llama3-v-2_5", 506_831_088, 95_551_104, 16, 40_140_800),   # (96 queries, fp16)
    ("minicpm-v-4", 453_698_800, 42_418_816, 16, 25_088_000),
    # 4.5's Resampler4_5: the 36,000-row temporal table beside the 2D one
    ("minicpm-v-4_5", 506_700_016, 95_420_032, 16, 335_052_800),
    # its tower dropped to 2 layers; the 4.5 one so400m (no vision_config) to 26, its kv_proj
    # gone (1,152 = 1,152)
    ("tiny-minicpm-v-2_6-drop", 486_528, 420_352, 4, 2_508_800),
    ("tiny-minicpm-v-4_5-default-tower", 409_236_640, 13_189_248, 16, 94_233_600),
    # Idefics3's tower at 364 px and the connector (1,152 x 4 to 4,096, whole)
    ("idefics3-8b-llama3", 431_800_560, 20_520_576, 16, 0),
    ("smolvlm2-2.2b-instruct", 434_220_912, 22_940_928, 16, 0),   # (scale 3: 1,152 x 9)
    # (its text model's 9 heads refuse TP 2: the whole part is not measured)
    ("smolvlm-256m-instruct", 93_510_912, 8_511_744, 12, 0),
    ("tiny-smolvlm-partial-tower", 1_757_760, 497_664, 6, 0),
    # CLIP-L/336 to 23 layers, glb_GN / sub_GN, the projection, and the class's own
    # embed_tokens (32,064 x 3,072, split over TP); CLIP's 577 position_ids
    ("phi-3.5-vision-instruct", 411_444_224, 23_371_776, 16, 4_616),
    ("tiny-phi3v-last-layer", 304_892_416, 2_468_352, 16, 4_616),   # (24 layers, post norm)
    # Phi-4's SigLIP NaViT to 26 layers with its separators and projection (411,069,856), the
    # conformer with its subsampling, T5 bias and two projections (466,416,416, all whole);
    # the conformer's dev_type scalar in bfloat16
    ("phi-4-multimodal-instruct", 877_486_272, 481_438_880, 16, 2),
    ("tiny-phi4mm-small-audio", 368_301_136, 2_718_928, 16, 2),   # (NaViT to 24 layers)
])
def test_tower_sizes(base: str, total: int, whole: int, heads: int, buffers: int) -> None:
    """vLLM's non-language-model parameters at TP 1 (and whole: twice its TP 2 rank's less
    them, where TP 2 builds): the full build less the --language-model-only one."""
    g = read_hf_config(_config(base), name=base)
    full, lmo = CASES[base]["tp"], CASES[f"{base} --language-model-only"]["tp"]
    assert total == full["1"][0]["param_numel"] - lmo["1"][0]["param_numel"]
    if "refused" not in full["2"][0]:
        assert whole == 2 * (full["2"][0]["param_numel"] - lmo["2"][0]["param_numel"]) - total
    assert (g.vision_params, g.vision_whole, g.vision_heads) == (total, whole, heads)
    assert g.vision_buffers == buffers


@pytest.mark.parametrize(("base", "cls", "llm"), [
    ("minicpm-llama3-v-2_5", "MiniCPMV2_5", "llama"), ("minicpm-v-2_6", "MiniCPMV2_6", "qwen2"),
    ("minicpm-v-4", "MiniCPMV4_0", "llama"), ("minicpm-v-4_5", "MiniCPMV4_5", "qwen3"),
])
def test_minicpmv_builds_the_language_model_of_its_version(base: str, cls: str,
                                                           llm: str) -> None:
    """2.6's Qwen2 has a biased QKV and 4.5's Qwen3 q/k norms, which kvcli left out while it
    read model_type minicpmv as a plain Llama (2.6: 258,048 B short at TP 1)."""
    rank = CASES[base]["tp"]["1"][0]
    names = rank["param_numel_by_name"]
    g = read_hf_config(_config(base), name=base)
    assert rank["class"] == cls and g.model_type == llm and g.name == base
    assert g.attention_bias == ("llm.model.layers.*.self_attn.qkv_proj.bias" in names)
    assert g.qk_norm == ("llm.model.layers.*.self_attn.q_norm.weight" in names)


def test_minicpmv_versions_vllm_does_not_build_are_refused() -> None:
    cfg = {**_config("tiny-minicpm-v-2_6-drop"), "version": 3.0}
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="config.json")
    assert e.value.field == "version"
    assert str(e.value) == ("config.json: field 'version': 3.0: vLLM's MiniCPMV supports "
                            "versions 2.0, 2.5, 2.6, 4.0, 4.5")


def test_minicpmv_2_0_is_minicpm_with_its_timm_tower_uncounted() -> None:
    """No version, hidden 2,304 and 64 queries: vLLM's 2.0, MiniCPM with a timm SigLIP (not
    counted: the warning stays)."""
    cfg = {k: v for k, v in _config("tiny-minicpm-v-2_6-drop").items() if k != "version"}
    cfg.update(hidden_size=2304, query_num=64, num_attention_heads=36, num_key_value_heads=36)
    g = read_hf_config(cfg, name="v2")
    assert g.model_type == "minicpm" and g.vision_params == 0
    assert uncounted_tower_note(g, None, "--gpu-memory-gib", "--num-blocks") is not None


def test_idefics3_takes_the_wrappers_tie_flag() -> None:
    """SmolVLM-256M's text config ties its head, the wrapper does not: vLLM copies the
    wrapper's flag into the text config (VllmConfig.with_hf_config) and builds lm_head."""
    cfg = _config("smolvlm-256m-instruct")
    assert cfg["text_config"]["tie_word_embeddings"] and not cfg["tie_word_embeddings"]
    assert "lm_head.weight" in CASES["smolvlm-256m-instruct"]["tp"]["1"][0]["param_numel_by_name"]
    assert not read_hf_config(cfg).tie_word_embeddings


@pytest.mark.parametrize(("base", "blocks"), [
    # (before, the towers uncounted with the warning: 69,529; 30,023; 220,779; 26,549;
    # 30,008; 23,969; 23,969; 11,342; 34,012)
    ("minicpm-v-2_6", 68_430), ("minicpm-llama3-v-2_5", 29_521), ("minicpm-v-4", 217_933),
    ("minicpm-v-4_5", 25_977), ("idefics3-8b-llama3", 29_596), ("smolvlm-instruct", 23_693),
    ("smolvlm2-2.2b-instruct", 23_693), ("phi-3.5-vision-instruct", 11_211),
    ("phi-4-multimodal-instruct", 33_175),
])
def test_80_gib_blocks_without_the_uncounted_tower_warning(base: str, blocks: int) -> None:
    res = CliRunner().invoke(app, ["config", "--model-config", str(DATA / f"{base}.config.json"),
                                   "--gpu-memory-gib", "80", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["num_blocks"] == blocks
    assert not [w for w in doc["warnings"] if "multimodal tower" in w]


def test_phi4mm_drops_each_tower_with_its_limits() -> None:
    """The audio limit at 0 drops the conformer (466,416,416); the image limit at 0 keeps the
    NaViT, which video reads too, as vLLM does."""
    g = read_hf_config(_config("phi-4-multimodal-instruct"))
    assert [(p.modalities, p.total) for p in g.vision_parts] == [
        (("image", "video"), 411_069_856), (("audio",), 466_416_416)]
    full = CASES["phi-4-multimodal-instruct"]["tp"]["1"][0]["param_numel"]
    audio0 = CASES['phi-4-multimodal-instruct --limit-mm-per-prompt {"audio":0}']
    image0 = CASES['phi-4-multimodal-instruct --limit-mm-per-prompt {"image":0}']
    assert full - audio0["tp"]["1"][0]["param_numel"] == 466_416_416
    assert image0["tp"]["1"][0]["param_numel"] == full


def test_phi4mm_conformer_settings_kvcli_does_not_model_stay_uncounted() -> None:
    cfg = _config("tiny-phi4mm-small-audio")
    cfg["audio_processor"]["config"]["batch_norm"] = True
    g = read_hf_config(cfg)
    assert g.vision_params == 0
    assert uncounted_tower_note(g, None, "--gpu-memory-gib", "--num-blocks") is not None
