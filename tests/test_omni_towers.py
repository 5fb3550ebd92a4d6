"""kvcli's weights and buffers for Qwen2-Audio, Qwen2.5-Omni and Qwen3-Omni (their thinkers)
against vLLM 0.33.0's own classes, built on the meta device at TP 1, 2, 4 and 8, every rank,
alone and under the multimodal serving options (tests/data/weights_census/mm_omni/answers.json,
recorded by record_towers.py there): the bytes a rank holds and its buffers, exactly, audio
and vision towers included; the omni configs read (their thinker) where kvcli refused them."""

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
from tests.census_rows import (
    case_geometry,
    case_mm,
    refused_tps,
)

DATA = Path(__file__).parent / "data" / "weights_census" / "mm_omni"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]


def _config(base: str) -> dict:
    return json.loads((DATA / f"{base}.config.json").read_text())


def _geometry(name: str, *, applied: bool = True):
    return case_geometry(DATA, CASES, name, applied=applied)


REFUSED = refused_tps(CASES)


@pytest.mark.parametrize(("name", "tp"), REFUSED)
def test_what_vllm_cannot_build_kvcli_refuses(name: str, tp: int) -> None:
    """TP 8 does not divide Qwen2.5-Omni's vision MLP (3,420 wide: vLLM's bare "AssertionError"
    from a shard's size), even where the tower is then dropped (it is still constructed)."""
    assert len(REFUSED) == 8 and {p.values[1] for p in REFUSED} == {8}
    assert CASES[name]["tp"][str(tp)][0]["refused"] == "AssertionError: "
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=_geometry(name, applied=False), tensor_parallel_size=tp,
                                gpu_memory_gib=80, max_model_len=4096, mm=case_mm(CASES[name]))
    assert e.value.field == "tensor_parallel_size"


@pytest.mark.parametrize(("base", "total", "whole", "buffers"), [
    # the Whisper-style encoder (32 layers 1,280 wide, learned positions) and the projector
    # to 4,096: plain torch modules, whole on every rank; no buffer
    ("qwen2-audio-7b-instruct", 642_215_936, 642_215_936, 0),
    # the audio encoder (whole; its float32 sinusoid table 1,500 x 1,280) and Qwen2.5-VL's
    # tower (its 8,192 x 40 bfloat16 rotary cache)
    ("qwen2.5-omni-7b", 1_316_197_376, 641_321_216, 7_680_000 + 655_360),
    ("qwen2.5-omni-3b", 1_306_360_832, 639_348_992, 7_680_000 + 655_360),
    # vLLM's own audio encoder, split over TP 2 (20 heads), and Qwen3-VL's tower with its three
    # deepstack mergers (rotary cache 8,192 x 36)
    ("qwen3-omni-30b-a3b-instruct", 1_186_558_576, 23_144_448, 7_680_000 + 589_824),
])
def test_tower_sizes(base: str, total: int, whole: int, buffers: int) -> None:
    """vLLM's towers at TP 1 (and whole: twice its TP 2 rank's less them): the full build less
    the --language-model-only one."""
    g = read_hf_config(_config(base), name=base)
    full, lmo = CASES[base]["tp"], CASES[f"{base} --language-model-only"]["tp"]
    assert total == full["1"][0]["param_numel"] - lmo["1"][0]["param_numel"]
    assert whole == 2 * (full["2"][0]["param_numel"] - lmo["2"][0]["param_numel"]) - total
    assert (g.vision_params, g.vision_whole) == (total, whole)
    assert sum(p.buffers for p in g.vision_parts) == g.vision_buffers == buffers


def test_qwen3_omni_audio_stays_whole_where_tp_does_not_divide_its_heads() -> None:
    """At TP 8 the 20-head audio encoder is built whole on every rank (`disable_tp`), at TP 4
    split: what the text model and vision tower leave of a rank is the audio's."""
    g = read_hf_config(_config("qwen3-omni-30b-a3b-instruct"))
    audio = next(p for p in g.vision_parts if p.modalities == ("audio",))
    assert audio.total == 647_927_168 and audio.tp_fallback == (20, 629_432_320)
    full = CASES["qwen3-omni-30b-a3b-instruct"]["tp"]
    no_audio = CASES['qwen3-omni-30b-a3b-instruct --limit-mm-per-prompt {"audio":0}']["tp"]
    assert full["8"][0]["param_numel"] - no_audio["8"][0]["param_numel"] == audio.total
    assert (full["4"][0]["param_numel"] - no_audio["4"][0]["param_numel"]
            == audio.whole + 629_432_320 // 4)


def test_deepstack_scratch_goes_with_qwen3_omnis_vision_tower() -> None:
    """qwen3_omni_moe_thinker.py allocates deepstack_input_embeds only where `visual` is built
    (not a StageMissingLayer): 3 levels, dropped with image and video at 0."""
    g = read_hf_config(_config("qwen3-omni-30b-a3b-instruct"))
    assert g.vision_deepstack == 3
    name = 'qwen3-omni-30b-a3b-instruct --limit-mm-per-prompt {"image":0,"video":0}'
    assert apply_mm(g, case_mm(CASES[name]))[0].vision_deepstack == 0


@pytest.mark.parametrize(("base", "tp", "before", "after"), [
    ("qwen2-audio-7b-instruct", "1", 7571, 7418),
    ("qwen2.5-omni-7b", "1", None, 66617),
    ("qwen3-omni-30b-a3b-instruct", "1", None, 9847),
])
def test_blocks_at_80_gib_and_no_uncounted_tower_warning(base: str, tp: str, before: int | None,
                                                          after: int) -> None:
    """(before: Qwen2-Audio's tower uncounted, with the warning; the omni configs refused)"""
    res = CliRunner().invoke(app, ["config", "--model-config", str(DATA / f"{base}.config.json"),
                                   "--gpu-memory-gib", "80", "-tp", tp, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["num_blocks"] == after
    assert not [w for w in out["warnings"] if "multimodal tower" in w]


def test_an_omni_config_without_its_thinker_is_refused_in_one_line() -> None:
    cfg = {k: v for k, v in _config("qwen2.5-omni-7b").items() if k != "thinker_config"}
    with pytest.raises(InputError) as e:
        read_hf_config(cfg)
    assert e.value.field == "thinker_config" and "\n" not in e.value.message



@pytest.mark.parametrize(("key", "field"), [
    ("image_size", "thinker_config.vision_config.image_size"),
    ("apply_vit_abs_pos_embed", "thinker_config.vision_config.apply_vit_abs_pos_embed"),
    ("tie_word_embeddings", "thinker_config.text_config.tie_word_embeddings")])
def test_qwen3_omni_keys_its_config_classes_do_not_default_are_required(key: str,
                                                                        field: str) -> None:
    """(vLLM reads them and cannot build the model without: "'Qwen3OmniMoeVisionEncoderConfig'
    object has no attribute 'image_size'", the KV-spec census's first try)"""
    cfg = _config("qwen3-omni-30b-a3b-instruct")
    del cfg["thinker_config"]["vision_config" if "vision" in field else "text_config"][key]
    with pytest.raises(InputError) as e:
        read_hf_config(cfg)
    assert e.value.field == field and "\n" not in e.value.message
