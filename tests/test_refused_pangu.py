"""openPangu Pro MoE V2 (PanguProMoEV2ForCausalLM) against vLLM 0.33.0's own class built here
on the meta device from a stand-in config class (tests/data/refused_lifted/answers.json): its
static-sink attention's SinkFullAttentionSpec (K qk_nope_dim + qk_rope_dim wide, V v_channels
wide; interleaved_sliding_window never reaches the spec), one group, the blocks vLLM plans, and
the weights and buffers (sink keys, values or their zero buffer, the rotary part's RoPE cache,
the sink keys through k_layernorm each layer keeps) of every rank at TP 1, 2, 4 and 8: 59
specs, 3 plans and 33 built ranks equal (tiny at TP 4 and 8 refused by both). Before: refused
by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvcore.errors import InputError
from kvcore.models.buffers import estimate_buffer_bytes
from kvcore.models.geometry import ModelGeometry
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_weights_bytes
from kvcore.models.worker_specs import layer_specs
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import built_ranks, config_on_plan

DATA = Path(__file__).parent / "data" / "refused_lifted"
NAMES = ("tiny-pangu-v2-sink", "tiny-pangu-v2-sinkv", "pangu-pro-moe-v2")
CASES = {n: json.loads((DATA / "answers.json").read_text())["cases"][n] for n in NAMES}


def _read(name: str, **edits: object) -> ModelGeometry:
    cfg = json.loads((DATA / f"{name}.config.json").read_text())
    return read_hf_config({k: v for k, v in {**cfg, **edits}.items() if v is not None},
                          name=name, source="pangu.json")


@pytest.mark.parametrize("name", NAMES)
def test_every_cache_spec_is_vllms(name: str) -> None:
    """A full-attention page of K and V widths added (tiny: 16 x 2 x (64 + 32) x 2 = 6,144),
    no window (tiny's interleaved_sliding_window 64 is the kernel's alone)."""
    s: Any
    for s, r in zip(layer_specs(_read(name)).values(), CASES[name]["specs"], strict=True):
        assert r["type"] == "SinkFullAttentionSpec"     # (FullAttentionManager's, asserted)
        assert (s.block_size, s.num_kv_heads, s.head_size, s.dtype,
                getattr(s, "sliding_window", None), s.page_size_bytes) == (
            r["block_size"], r["num_kv_heads"], r["head_size"], r["dtype"],
            r["sliding_window"], r["page_size_bytes"])


def _normed_sink_keys(name: str, tp: int) -> int:
    """The sink keys through k_layernorm that every layer keeps (OpenPanguSinkAttention's
    post_weight_load hands them to StaticSinkAttention: neither parameter nor buffer; rank
    0's `scratch` row, one layer's), which kvcli counts with the buffers."""
    one = CASES[name]["tp"][str(tp)][0]["scratch"]["model.layers.*.self_attn.attn.sink_key"]
    return one["bytes"] * len(CASES[name]["specs"])


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES))
def test_each_rank_is_vllms_bytes(name: str, tp: int, rank: int) -> None:
    g, rec = _read(name), CASES[name]["tp"][str(tp)][rank]
    assert estimate_weights_bytes(g, tp) == sum(rec["param_bytes_by_dtype"].values())
    assert estimate_buffer_bytes(g, tp) == sum(rec["buffer_bytes_by_dtype"].values()) \
        + _normed_sink_keys(name, tp)


def test_the_normed_sink_keys() -> None:
    """The 72B-like's at TP 1: 128 sinks x 8 KV heads x 192 x 2 B a layer, 50 layers; kvcli
    counted none before (19.7 MB a rank)."""
    rec = CASES["pangu-pro-moe-v2"]["tp"]["1"][0]["scratch"]
    assert rec["model.layers.*.self_attn.attn.sink_key"] == {
        "shape": [128, 8, 192], "dtype": "bfloat16", "bytes": 393_216}
    assert _normed_sink_keys("pangu-pro-moe-v2", 1) == 19_660_800


@pytest.mark.parametrize("name", NAMES)
def test_what_vllm_refuses_to_build_kvcli_refuses(name: str) -> None:
    for tp, ranks in CASES[name]["tp"].items():
        if "refused" in ranks[0]:
            with pytest.raises(InputError) as e:
                resolve_kv_cache_config(geometry=_read(name), tensor_parallel_size=int(tp),
                                        gpu_memory_gib=80, max_model_len=2048)
            assert e.value.field == "tensor_parallel_size"


@pytest.mark.parametrize("name", NAMES)
def test_kvcli_config_sizes_as_vllm_planned(name: str) -> None:
    (plan,) = CASES[name]["planning"]
    assert plan["managers"] == ["SinkFullAttentionManager"]
    d = config_on_plan(DATA / f"{name}.config.json", plan, "--max-model-len",
                       str(CASES[name]["max_model_len"]))
    assert d["block_size"] == plan["engine_block_size"]
    assert [(g["block_size"], g["page_size_bytes"], ["model." + n + ".self_attn.attn"
                                                      for n in g["layers"]])
            for g in d["groups"]] == [(g["block_size"], g["page_size_bytes"], g["layers"])
                                      for g in plan["groups"]]


def test_the_layers_kvcli_does_not_model_are_refused_in_one_line() -> None:
    """Without sinks the class builds MLA or windowed plain attention: unrecorded."""
    for edits in ({"param_sink_number": None}, {"param_sink_number": 0},
                  {"kv_lora_rank": 512}):
        with pytest.raises(InputError) as e:
            _read("tiny-pangu-v2-sink", **edits)
        assert e.value.field == "param_sink_number" and "\n" not in str(e.value)
    with pytest.raises(InputError) as e:
        _read("tiny-pangu-v2-sink", v_channels=None)
    assert e.value.field == "v_channels"


def test_a_block_the_sinks_do_not_fill_is_refused_as_vllm_asserts() -> None:
    """32 sinks: blocks of 16 and 32 take them (the spec's page scales), 64 is refused."""
    g = _read("tiny-pangu-v2-sink")
    assert layer_specs(g, block_size=32)["layers.0"].page_size_bytes == 2 * 6144
    with pytest.raises(InputError, match="32 sink tokens") as e:
        layer_specs(g, block_size=64)
    assert e.value.field == "block_size"
