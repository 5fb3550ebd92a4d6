"""Gemma 3's vision tower and projector in the weights estimate (`kvcore.models.siglip`):
the published so400m tower in the preset, a config.json's own vision_config, the class's
default SigLIP without one, per TP rank as vLLM 0.33 shards them (the census,
tests/data/weights_census/answers.json), on the first pipeline stage only, and never in the
clock's decode weight stream."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest

from kvcore.clock.batch import StepBatch
from kvcore.clock.gpus import find_gpu
from kvcore.clock.roofline import RooflineClock
from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.presets import PRESETS
from kvcore.models.weights import estimate_weights_bytes

CENSUS = json.loads((Path(__file__).parent / "data" / "weights_census" / "answers.json")
                    .read_text())["cases"]
GEMMA = PRESETS["gemma-3-27b"][1]
VISION = ("vision_tower.", "multi_modal_projector.")


def _census_vision(tp: int) -> int:
    """vLLM's vision modules on rank 0 at this TP (their parameters by name)."""
    names = CENSUS["gemma-3-27b"]["tp"][str(tp)][0]["param_numel_by_name"]
    return sum(v for k, v in names.items() if k.startswith(VISION))


def test_the_preset_counts_so400m_and_the_projector():
    """d 1152, 4304 wide, 27 layers, 896 px in 14 px patches (64^2 positions); the projector
    1152 x 5376 and its norm. Whole on every rank: embeddings, LayerNorms, the row-parallel
    biases, the projector (11,780,352); the rest split."""
    g = read_hf_config(GEMMA)
    assert (g.vision_params, g.vision_whole) == (423_060_336, 11_780_352)
    assert _census_vision(1) == 423_060_336
    for tp in (2, 4, 8):
        assert _census_vision(tp) == 11_780_352 + (423_060_336 - 11_780_352) // tp


def test_a_config_without_vision_config_gets_the_default_siglip():
    """transformers' SiglipVisionConfig (768, 3072, 12 layers, 224 px, 16 px patches): the
    89,926,656 parameters vLLM built for the preset when it typed in no vision_config."""
    cfg = {k: v for k, v in GEMMA.items() if k != "vision_config"}
    g = read_hf_config(cfg)
    assert (g.vision_params, g.vision_whole) == (89_926_656, 4_927_488)
    # vLLM's rank 0 at TP 2: 4,927,488 whole + 84,999,168 / 2
    assert g.vision_whole + (g.vision_params - g.vision_whole) // 2 == 47_427_072


def test_a_config_json_counts_its_own_tower():
    cfg = copy.deepcopy(GEMMA)
    cfg["vision_config"].update(num_hidden_layers=2, image_size=448)
    d, inter = 1152, 4304
    layer = 4 * d * d + 2 * d * inter + inter + 9 * d
    whole = 3 * 14 * 14 * d + d + 32 * 32 * d + 2 * 6 * d + 2 * d + d * 5376 + d
    g = read_hf_config(cfg)
    assert (g.vision_params, g.vision_whole) == (whole + 2 * (layer - 6 * d), whole)


def test_text_only_gemma_3_has_no_tower():
    cfg = dict(GEMMA["text_config"], architectures=["Gemma3ForCausalLM"],
               torch_dtype="bfloat16")
    assert read_hf_config(cfg).vision_params == 0


def test_a_bad_vision_size_is_named():
    cfg = copy.deepcopy(GEMMA)
    cfg["vision_config"]["num_hidden_layers"] = 0
    with pytest.raises(InputError) as err:
        read_hf_config(cfg, source="c.json")
    assert err.value.field == "vision_config.num_hidden_layers"


def test_the_tower_is_on_the_first_stage_only():
    g = read_hf_config(GEMMA)
    bare = dataclasses.replace(g, vision_params=0, vision_whole=0)
    first, last = (range(21), True, False), (range(41, 62), False, True)
    assert (estimate_weights_bytes(g, 2, first) - estimate_weights_bytes(bare, 2, first)
            == 2 * (11_780_352 + 411_279_984 // 2))
    assert estimate_weights_bytes(g, 2, last) == estimate_weights_bytes(bare, 2, last)


def test_the_clock_reads_no_vision_weights_per_step():
    """A decode step runs the decoder only: the roofline's time and bytes are the same with
    and without the tower."""
    g = read_hf_config(GEMMA, name="gemma-3-27b")
    bare = dataclasses.replace(g, vision_params=0, vision_whole=0)
    batch = StepBatch([(1, 4097, False)] * 64)
    steps = [[(t.component.name, t.component.bytes, t.ms)
              for t in RooflineClock(m, find_gpu("h100-sxm"), tp=2).timed(batch)]
             for m in (g, bare)]
    assert steps[0] == steps[1]
