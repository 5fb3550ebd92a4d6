"""Dory (DoryForCausalLM, vLLM 0.33's own DoryConfig) against vLLM 0.33.0's class built here on
the meta device (tests/data/refused_lifted/answers.json): attention or MLP blocks by
layer_types, the recurrent blocks' attention a cache a loop under recurrent_kv_cache_mode
per_loop (one under last_loop), registered block by block; the KVCacheConfig vLLM plans; the
weights and buffers of its one rank (vLLM refuses TP > 1). Before: refused by name (and by
layer_types' 'mlp' had the name gone)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kv_census_rows import ROWS

from kvcore.errors import InputError
from kvcore.models.buffers import estimate_buffer_bytes
from kvcore.models.geometry import ModelGeometry
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_weights_bytes
from kvcore.models.worker_specs import layer_specs
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import assert_config_blocks, config_on_plan

DATA = Path(__file__).parent / "data" / "refused_lifted"
CASES = {n: c for n, c in json.loads((DATA / "answers.json").read_text())["cases"].items()
         if "dory" in n}


def _read(name: str, **edits: object) -> ModelGeometry:
    cfg = json.loads((DATA / f"{name}.config.json").read_text())
    return read_hf_config({k: v for k, v in {**cfg, **edits}.items() if v is not None},
                          name=name, source="dory.json")


def _ours(name: str) -> str:
    return name.removeprefix("backbone.").removesuffix(".mixer.attn")


def test_the_recorded_cases() -> None:
    assert sorted(CASES) == ["dory-defaults", "tiny-dory", "tiny-dory-last", "tiny-dory-loop4"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_cache_spec_is_vllms(name: str) -> None:
    """tiny (8 blocks, MLP at the odd ones, 2-5 recurrent, 3 loops): sliding 0, then 2, 10, 18
    (block 2's loops), 4, 12, 20, full 6; loop4 (per_loop, 4 loops): full 0, sliding 1, 7, 13,
    19, full 3, 9, 15, 21, sliding 5; last_loop: one cache a block."""
    recorded = {r["name"]: r for r in CASES[name]["specs"]}
    ours = layer_specs(_read(name))
    assert list(ours) == [_ours(n) for n in recorded]
    s: Any
    for s, r in zip(ours.values(), recorded.values(), strict=True):
        assert (type(s).__name__, s.block_size, s.num_kv_heads, s.head_size, s.dtype,
                getattr(s, "sliding_window", None), s.page_size_bytes) == (
            r["type"], r["block_size"], r["num_kv_heads"], r["head_size"], r["dtype"],
            r["sliding_window"], r["page_size_bytes"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_its_rank_is_vllms_bytes(name: str) -> None:
    """tiny: 6,309,840 B of weights (no norms; the head's 1,000 logit scales), 1,048,704 of
    buffers (two RoPE caches, one a block type's theta, and 16 B of scales for each of its 8
    Attentions); the defaults' two types share one cache (equal parameters)."""
    g, rec = _read(name), CASES[name]["tp"]["1"][0]
    assert estimate_weights_bytes(g, 1) == sum(rec["param_bytes_by_dtype"].values())
    assert estimate_buffer_bytes(g, 1) == sum(rec["buffer_bytes_by_dtype"].values())


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_more_than_one_rank_is_refused_as_vllm_refuses_it(tp: int) -> None:
    assert CASES["tiny-dory"]["tp"][str(tp)][0]["refused"] == [
        "ValueError: Dory currently supports tensor_parallel_size=1 only"]
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=_read("dory-defaults"), tensor_parallel_size=tp,
                                gpu_memory_gib=80, max_model_len=4096)
    assert e.value.field == "tensor_parallel_size"
    assert "tensor_parallel_size=1 only" in str(e.value)


@pytest.mark.parametrize("name", sorted(CASES))
def test_kvcli_config_sizes_as_vllm_planned(name: str) -> None:
    """tiny at 1 GiB: 131,072 blocks in 8 one-layer groups; loop4: 34,952 in two groups of
    five; the defaults at 20 GiB, 8,192 tokens: 36,408 in four groups of nine."""
    (plan,) = CASES[name]["planning"]
    d = config_on_plan(DATA / f"{name}.config.json", plan, "--max-model-len",
                       str(CASES[name]["max_model_len"]))
    assert d["block_size"] == plan["engine_block_size"]
    assert [[f"backbone.{n}.mixer.attn" for n in g["layers"]] for g in d["groups"]] == [
        g["layers"] for g in plan["groups"]]


def test_the_defaults_at_80_gib() -> None:
    """DoryConfig's own model (72 blocks, 36 attention): refused by name before."""
    assert_config_blocks(DATA / "dory-defaults.config.json", "120,498")


@pytest.mark.parametrize(("edits", "field"), [
    ({"layer_types": ["mlp"] * 7 + ["moe"]}, "layer_types"),
    ({"layer_types": ["mlp"] * 7}, "layer_types"),
    ({"sliding_window": "64"}, "sliding_window"), ({"sliding_window": 0}, "sliding_window"),
    ({"tie_word_embeddings": True}, "tie_word_embeddings"),     # (its class_tie)
    ({"attention_bias": True}, "attention_bias"), ({"hidden_act": "gelu"}, "hidden_act"),
    ({"n_input_layers": 5, "n_output_layers": 5}, "n_recurrent_layers"),
    ({"n_recurrent_layers": 3}, "n_recurrent_layers"),
    ({"n_recurrent_loops": 0}, "n_recurrent_loops"),
    ({"n_recurrent_loops": "3"}, "n_recurrent_loops"),
    ({"recurrent_kv_cache_mode": "shared"}, "recurrent_kv_cache_mode"),
    ({"rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1.0}}},
     "rope_parameters"),
    ({"rope_parameters": {"sliding_attention": {"rope_type": "yarn", "rope_theta": 1.0},
                          "full_attention": {"rope_type": "default"}}}, "rope_parameters"),
    ({"rope_parameters": {"sliding_attention": {"rope_type": "default",
                                                "partial_rotary_factor": 0.01},
                          "full_attention": {"rope_type": "default"}}}, "rope_parameters")])
def test_what_dory_config_refuses_is_refused_by_its_key(edits: dict, field: str) -> None:
    """DoryConfig.validate's checks (vLLM builds none of these), each in one line."""
    with pytest.raises(InputError) as e:
        g = _read("tiny-dory", **edits)
        estimate_buffer_bytes(g, 1)     # (the RoPE parameters are read for the buffers)
    assert e.value.field == field
    assert "\n" not in str(e.value)


def test_a_quantised_checkpoints_weights_are_not_sized() -> None:
    g = _read("tiny-dory", quantization_config={"quant_method": "fp8"})
    with pytest.raises(InputError) as e:
        estimate_weights_bytes(g, 1)
    assert e.value.field == "weights_gib" and "Dory" in str(e.value)


def test_the_census_config_vllm_could_not_load_is_refused_by_the_same_key() -> None:
    """The KV-spec census's config: 8 blocks whose n_recurrent_layers says 72 (DoryConfig's
    class validation refused it there)."""
    assert "must sum to num_hidden_layers" in ROWS["DoryForCausalLM"]["skipped"]
    with pytest.raises(InputError) as e:
        read_hf_config(ROWS["DoryForCausalLM"]["config"])
    assert e.value.field == "n_recurrent_layers"
