"""Sarvam's MLA model (SarvamMLAForCausalLM, model_type sarvam_mla) against vLLM 0.33.0's own
class built here on the meta device (tests/data/refused_lifted/answers.json): the MLA cache
spec of every layer, the KVCacheConfig vLLM plans on the memory recorded, and the weights and
buffers of every rank at TP 1, 2, 4 and 8. Before: refused by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvcore.errors import InputError
from kvcore.models.buffers import estimate_buffer_bytes
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_weights_bytes
from kvcore.models.worker_specs import layer_specs
from tests.census_rows import assert_config_blocks, built_ranks, case_geometry, config_on_plan

DATA = Path(__file__).parent / "data" / "refused_lifted"
CASES = {n: c for n, c in json.loads((DATA / "answers.json").read_text())["cases"].items()
         if c.get("class") == "SarvamMLAForCausalLM"}


def test_the_cases_recorded() -> None:
    assert sorted(CASES) == ["sarvam-105b", "tiny-sarvam-mla", "tiny-sarvam-mla-noq"]
    # (vLLM's model-level use_mla is false for sarvam_mla; its layers are MLA all the same)
    assert {c["use_mla"] for c in CASES.values()} == {False}


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_cache_spec_is_vllms(name: str) -> None:
    g = read_hf_config(json.loads((DATA / f"{name}.config.json").read_text()), name=name)
    recorded = CASES[name]["specs"]
    assert [r["name"] for r in recorded] == [f"model.layers.{i}.self_attn.attn"
                                             for i in range(len(recorded))]
    s: Any
    for s, r in zip(layer_specs(g).values(), recorded, strict=True):
        assert (type(s).__name__, s.block_size, s.num_kv_heads, s.head_size, s.dtype,
                s.page_size_bytes) == (r["type"], r["block_size"], r["num_kv_heads"],
                                       r["head_size"], r["dtype"], r["page_size_bytes"])


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES))
def test_each_rank_is_vllms_bytes(name: str, tp: int, rank: int) -> None:
    """Weights (the float32 router biases apart) and buffers (a RoPE cache, MLA's scales)."""
    g, rec = case_geometry(DATA, CASES, name), CASES[name]["tp"][str(tp)][rank]
    assert estimate_weights_bytes(g, tp) == sum(rec["param_bytes_by_dtype"].values())
    assert estimate_buffer_bytes(g, tp) == sum(rec["buffer_bytes_by_dtype"].values())


@pytest.mark.parametrize("name", sorted(CASES))
def test_kvcli_config_sizes_as_vllm_planned(name: str) -> None:
    """The published shapes at 70 GiB: 127,431 blocks of 16 (576-value latents, 32 layers);
    tiny at 1 GiB: 87,381; its five-layer variation 69,905."""
    (plan,) = CASES[name]["planning"]
    # (block 16: the one vLLM's MLA backend gave, an H100's FLASH_ATTN_MLA's too)
    d = config_on_plan(DATA / f"{name}.config.json", plan, "--max-model-len",
                       str(CASES[name]["max_model_len"]), "--block-size", "16")
    assert d["block_size"] == plan["engine_block_size"]
    assert [g["page_size_bytes"] for g in d["groups"]] == [
        g["page_size_bytes"] for g in plan["groups"]]


def test_the_published_shapes() -> None:
    """106.0B parameters at TP 1 (vLLM's count): 31 MoE layers of 128 experts after one dense
    layer; 88,741 blocks at 80 GiB on 8 ranks (refused before)."""
    g = case_geometry(DATA, CASES, "sarvam-105b")
    assert (g.moe_layers.count(True), g.num_experts, g.shared_expert_width) == (31, 128, 2048)
    assert CASES["sarvam-105b"]["tp"]["1"][0]["param_numel"] == 106_031_767_424
    assert_config_blocks(DATA / "sarvam-105b.config.json", "88,741",
                         "--tensor-parallel-size", "8")


def test_the_class_is_read_only_as_its_checkpoints_write_it() -> None:
    """Under another model_type (or none) kvcli would read plain attention or DeepSeek's MoE,
    and without kv_lora_rank vLLM fails building the layer: both refused by that key."""
    cfg = json.loads((DATA / "tiny-sarvam-mla.config.json").read_text())
    for edits, field in (({"model_type": "deepseek_v2"}, "model_type"),
                         ({"model_type": None}, "model_type"),
                         ({"kv_lora_rank": None}, "kv_lora_rank")):
        with pytest.raises(InputError) as e:
            read_hf_config({k: v for k, v in {**cfg, **edits}.items() if v is not None},
                           source="s.json")
        assert e.value.field == field
    quantised = read_hf_config({**cfg, "quantization_config": {"quant_method": "fp8"}})
    with pytest.raises(InputError, match="a quantised Sarvam MLA checkpoint's weights"):
        estimate_weights_bytes(quantised, 1)
