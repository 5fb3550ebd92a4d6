"""Domyn Edge (DomynEdgeForCausalLM) against vLLM 0.33.0's own class built here on the meta
device from a stand-in config class (tests/data/refused_lifted/answers.json): a head size, a
window (window_sizes + 1) and RoPE or none a layer; vLLM's six one-layer groups at 1 GiB; the
weights and float32 RoPE caches of every rank at TP 1, 2 and 4 (4 heads: TP 8 refused by
both). Before: refused by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvcore.clock.gpus import GPUS
from kvcore.clock.roofline import RooflineClock
from kvcore.errors import InputError
from kvcore.models.buffers import estimate_buffer_bytes
from kvcore.models.geometry import ModelGeometry
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_weights_bytes
from kvcore.models.worker_specs import layer_specs
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import built_ranks, config_on_plan

DATA = Path(__file__).parent / "data" / "refused_lifted"
NAME = "tiny-domyn-edge"
CASE = json.loads((DATA / "answers.json").read_text())["cases"][NAME]


def _read(**edits: object) -> ModelGeometry:
    cfg = json.loads((DATA / f"{NAME}.config.json").read_text())
    return read_hf_config({k: v for k, v in {**cfg, **edits}.items() if v is not None},
                          name=NAME, source="domyn.json")


def test_every_cache_spec_is_vllms() -> None:
    """Head sizes 64, 64, 128, 64, 96, 128; windows 64, 64, full, 128, 64, full."""
    s: Any
    for s, r in zip(layer_specs(_read()).values(), CASE["specs"], strict=True):
        assert (type(s).__name__, s.block_size, s.num_kv_heads, s.head_size, s.dtype,
                getattr(s, "sliding_window", None), s.page_size_bytes) == (
            r["type"], r["block_size"], r["num_kv_heads"], r["head_size"], r["dtype"],
            r["sliding_window"], r["page_size_bytes"])


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks({NAME: CASE}))
def test_each_rank_is_vllms_bytes(name: str, tp: int, rank: int) -> None:
    """Buffers: float32 RoPE caches of head sizes 64, 96 and 128 (layer 2 has none)."""
    g, rec = _read(), CASE["tp"][str(tp)][rank]
    assert estimate_weights_bytes(g, tp) == sum(rec["param_bytes_by_dtype"].values())
    assert estimate_buffer_bytes(g, tp) == sum(rec["buffer_bytes_by_dtype"].values())


def test_tp8_is_refused_as_vllm_refuses_it() -> None:
    assert "AssertionError" in CASE["tp"]["8"][0]["refused"]
    with pytest.raises(InputError):
        resolve_kv_cache_config(geometry=_read(), tensor_parallel_size=8, gpu_memory_gib=80,
                                max_model_len=4096)


def test_kvcli_config_sizes_as_vllm_planned() -> None:
    """1 GiB: 65,536 blocks, six one-layer groups, the 64-wide layers at block 32 and the
    96-wide one's page padded to 16,384 bytes (vLLM 0.33 pads it unasked, and so does kvcli;
    --no-pad-pages refuses it, vLLM 0.13's rule)."""
    (plan,) = CASE["planning"]
    d = config_on_plan(DATA / f"{NAME}.config.json", plan, "--max-model-len", "4096")
    assert d["block_size"] == plan["engine_block_size"]
    assert [(g["block_size"], g["page_size_bytes"], ["model." + n + ".attention.attn"
                                                      for n in g["layers"]])
            for g in d["groups"]] == [(g["block_size"], g["page_size_bytes"], g["layers"])
                                      for g in plan["groups"]]
    pm = d["prefix_match"]
    assert (pm["scheduler_block_size"], pm["hash_block_size"],
            pm["cache_hit_alignment_tokens"]) == (
        plan["scheduler_block_size"], plan["hash_block_size"],
        plan["cache_hit_alignment_tokens"])


def test_what_kvcli_does_not_model_or_vllm_cannot_build_is_refused() -> None:
    with pytest.raises(InputError, match="does not time Domyn Edge"):
        RooflineClock(_read(), GPUS["h100-sxm"])
    for edits, field in (({"window_sizes": [[63, 0]]}, "window_sizes"),
                         ({"position_layers": ["rope"] * 5 + ["alibi"]}, "position_layers"),
                         ({"per_layer_config": {"1": {"head_dim": 0}}},
                          "per_layer_config.1.head_dim")):
        with pytest.raises(InputError) as e:
            _read(**edits)
        assert e.value.field == field
