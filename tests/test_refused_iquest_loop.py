"""IQuest-Coder's Loop models (IQuestLoopCoderForCausalLM) against vLLM 0.33.0's own class built
here on the meta device (tests/data/refused_lifted/answers.json): each decoder layer caches a
full layer on its first pass and a loop_window_size sliding window on each later one (vLLM's
layers N to loop_num x N - 1), heads hidden_size / num_attention_heads wide; the KVCacheConfig
vLLM plans; the weights (the decoder layers once, a loop gate a layer) and buffers of every
rank at TP 1-8. Before: refused by name (read otherwise as N full layers, tiny at 80 GiB gave
the same 2,411,532 blocks but 38,584,512 tokens and 9,420 requests at 4,096; vLLM's pool,
half its blocks sliding, holds 19,254,649 tokens and 4,700.8 requests)."""

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
from tests.census_rows import assert_config_blocks, built_ranks, config_on_plan

DATA = Path(__file__).parent / "data" / "refused_lifted"
CASES = {n: c for n, c in json.loads((DATA / "answers.json").read_text())["cases"].items()
         if "iquest" in n}
BUILT = {n: c for n, c in CASES.items() if "refused" not in c}


def _read(name: str, **edits: object) -> ModelGeometry:
    cfg = json.loads((DATA / f"{name}.config.json").read_text())
    return read_hf_config({k: v for k, v in {**cfg, **edits}.items() if v is not None},
                          name=name, source="iquest.json")


def test_the_recorded_cases() -> None:
    assert sorted(BUILT) == ["iquest-loopcoder-40b", "tiny-iquest-loop",
                             "tiny-iquest-loop-defaults", "tiny-iquest-loop3"]


@pytest.mark.parametrize("name", sorted(BUILT))
def test_every_cache_spec_is_vllms(name: str) -> None:
    """loop3 (3 layers, loop_num 3, window 32, head_dim 48 written): layers 0-2 full, 3-8
    sliding 32, each head 64 wide (512 / 8); defaults: loop_num 2, window 64."""
    recorded = {r["name"].removeprefix("model.").removesuffix(".self_attn.attn"): r
                for r in CASES[name]["specs"]}
    ours = layer_specs(_read(name))
    assert list(ours) == list(recorded)     # (vLLM's order: layer 0's passes, then 1's, ...)
    s: Any
    for layer, s in ours.items():
        r = recorded[layer]
        assert (type(s).__name__, s.block_size, s.num_kv_heads, s.head_size, s.dtype,
                getattr(s, "sliding_window", None), s.page_size_bytes) == (
            r["type"], r["block_size"], r["num_kv_heads"], r["head_size"], r["dtype"],
            r["sliding_window"], r["page_size_bytes"])
    assert _read("tiny-iquest-loop3").layer_kinds == ("full",) * 3 + ("sliding",) * 6
    assert _read("tiny-iquest-loop3").sliding_window == 32
    assert _read("tiny-iquest-loop-defaults").sliding_window == 64


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(BUILT))
def test_each_rank_is_vllms_bytes(name: str, tp: int, rank: int) -> None:
    """tiny at TP 1: 5,773,856 B of weights (2,080 of them the four gates), 524,416 of
    buffers (a RoPE cache and 16 B of scales for each of the 8 attention layers)."""
    g, rec = _read(name), CASES[name]["tp"][str(tp)][rank]
    assert estimate_weights_bytes(g, tp) == sum(rec["param_bytes_by_dtype"].values())
    assert estimate_buffer_bytes(g, tp) == sum(rec["buffer_bytes_by_dtype"].values())


def test_a_tp_vllm_cannot_build_is_refused() -> None:
    """tiny's 4 heads at TP 8: vLLM's AssertionError; kvcli refuses it."""
    assert "AssertionError" in CASES["tiny-iquest-loop"]["tp"]["8"][0]["refused"][0]
    with pytest.raises(InputError):
        resolve_kv_cache_config(geometry=_read("tiny-iquest-loop"), tensor_parallel_size=8,
                                gpu_memory_gib=80, max_model_len=4096)


@pytest.mark.parametrize("name", sorted(BUILT))
def test_kvcli_config_sizes_as_vllm_planned(name: str) -> None:
    """tiny at 1 GiB: 32,768 blocks in a full and a sliding group; loop3: 10,922 in three;
    the 40B-like at 60 GiB, 32,768 tokens: 12,288."""
    (plan,) = CASES[name]["planning"]
    d = config_on_plan(DATA / f"{name}.config.json", plan, "--max-model-len",
                       str(CASES[name]["max_model_len"]))
    assert d["block_size"] == plan["engine_block_size"]
    assert [g["page_size_bytes"] for g in d["groups"]] == [
        g["page_size_bytes"] for g in plan["groups"]]
    assert [[f"model.{n}.self_attn.attn" for n in g["layers"]] for g in d["groups"]] == [
        g["layers"] for g in plan["groups"]]


def test_the_40b_at_80_gib_on_8_ranks() -> None:
    """Refused before: 105,352 blocks (80 full layers, 80 sliding 64, a page 8,192 B)."""
    assert_config_blocks(DATA / "iquest-loopcoder-40b.config.json", "105,352",
                         "--tensor-parallel-size", "8")


@pytest.mark.parametrize(("edits", "field"), [
    ({"sliding_window": 128}, "sliding_window"), ({"loop_num": 0}, "loop_num"),
    ({"loop_num": "2"}, "loop_num"), ({"loop_window_size": 0}, "loop_window_size"),
    ({"loop_window_size": 6.5}, "loop_window_size"), ({"loop_num": 40_000}, "loop_num")])
def test_what_kvcli_does_not_model_is_refused_by_its_key(edits: dict, field: str) -> None:
    """A model-wide window (vLLM's engine then slides the first pass too, CacheConfig's) and
    pass counts or windows vLLM could not build a cache of."""
    with pytest.raises(InputError) as e:
        _read("tiny-iquest-loop", **edits)
    assert e.value.field == field
    assert "\n" not in str(e.value)


def test_a_quantised_checkpoints_weights_are_not_sized() -> None:
    g = _read("tiny-iquest-loop", quantization_config={"quant_method": "fp8"})
    with pytest.raises(InputError) as e:
        estimate_weights_bytes(g, 1)
    assert e.value.field == "weights_gib"
    assert "IQuestLoopCoderForCausalLM" in str(e.value)


def test_the_roofline_clock_does_not_time_its_passes(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from kvcli.app import app
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"timestamp": 0, "input_length": 32, "output_length": 2}) + "\n")
    r = CliRunner().invoke(app, ["replay", str(trace), "--model-config",
                                 str(DATA / "tiny-iquest-loop.config.json"), "--gpu-memory-gib",
                                 "8", "--clock", "roofline", "--gpu", "h100"])
    assert r.exit_code == 2
    assert "IQuest Loop's passes" in r.output
