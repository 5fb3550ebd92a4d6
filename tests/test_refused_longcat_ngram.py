"""LongCat-Flash-Lite (LongcatFlashNgramForCausalLM) against vLLM 0.33.0's own class built
here on the meta device (tests/data/refused_lifted/answers.json): LongCat-Flash's two MLA
caches a decoder layer, the KVCacheConfig vLLM plans on the memory recorded, and the weights
and buffers of every rank at TP 1, 2, 4 and 8, its n-gram embedding's tables, projections and
int32 buffers included. Before: refused by name, and a LongCat-Flash config naming no
model_type (as its checkpoints write them) read as plain attention."""

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
from tests.census_rows import assert_config_blocks, built_ranks, config_on_plan

DATA = Path(__file__).parent / "data" / "refused_lifted"
CASES = {n: c for n, c in json.loads((DATA / "answers.json").read_text())["cases"].items()
         if c.get("class") == "LongcatFlashNgramForCausalLM"}


def _read(name: str, **edits: object) -> ModelGeometry:
    cfg = json.loads((DATA / f"{name}.config.json").read_text())
    return read_hf_config({k: v for k, v in {**cfg, **edits}.items() if v is not None},
                          name=name, source=f"{name}.config.json")


def test_the_cases_recorded() -> None:
    assert sorted(CASES) == ["longcat-flash-lite", "tiny-longcat-ngram",
                             "tiny-longcat-ngram-notype", "tiny-longcat-no-ngram"]
    # (68.56B at TP 1: LongCat-Flash-Lite's 68.5B)
    assert CASES["longcat-flash-lite"]["tp"]["1"][0]["param_numel"] == 68_562_452_736


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_cache_spec_is_vllms(name: str) -> None:
    """2 x num_layers MLA caches (`self_attn.0`, `.1` a decoder layer), in vLLM's order."""
    recorded = CASES[name]["specs"]
    assert [r["name"] for r in recorded] == [
        f"model.layers.{i // 2}.self_attn.{i % 2}.attn"
        for i in range(len(recorded))]
    s: Any
    for s, r in zip(layer_specs(_read(name)).values(), recorded, strict=True):
        assert (type(s).__name__, s.block_size, s.num_kv_heads, s.head_size, s.dtype,
                s.page_size_bytes) == (r["type"], r["block_size"], r["num_kv_heads"],
                                       r["head_size"], r["dtype"], r["page_size_bytes"])


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES))
def test_each_rank_is_vllms_bytes(name: str, tp: int, rank: int) -> None:
    g, rec = _read(name), CASES[name]["tp"][str(tp)][rank]
    assert estimate_weights_bytes(g, tp) == sum(rec["param_bytes_by_dtype"].values())
    assert estimate_buffer_bytes(g, tp) == sum(rec["buffer_bytes_by_dtype"].values())


def test_the_ngram_embedding_by_name() -> None:
    """tiny: 4 tables of 4,001 to 4,007 rows (ratio 4 x 1,000), 16,016 padded to 16,064, 256
    wide; TP 2 halves the rows, not the projections; 84 int32 bytes of kernel tables."""
    rec = CASES["tiny-longcat-ngram"]["tp"]
    names = rec["1"][0]["param_numel_by_name"]
    assert names["model.ngram_embeddings.oe_embedder.weight"] == 16_064 * 256
    assert names["model.ngram_embeddings.oe_projection"] == 4 * 256 * 1024
    assert rec["2"][0]["param_numel_by_name"][
        "model.ngram_embeddings.oe_embedder.weight"] == 8_032 * 256
    assert rec["1"][0]["buffer_bytes_by_dtype"]["int32"] == 84
    g = _read("tiny-longcat-ngram")
    assert (g.ngram_tables, g.class_buffers) == ((4001, 4003, 4005, 4007), 84)


@pytest.mark.parametrize("name", [n for n in sorted(CASES) if CASES[n]["planning"]])
def test_kvcli_config_sizes_as_vllm_planned(name: str) -> None:
    """Lite at 50 GiB: 104,025 blocks of 16; tiny at 1 GiB."""
    (plan,) = CASES[name]["planning"]
    # (block 16: the one vLLM's MLA backend gave, an H100's FLASH_ATTN_MLA's too)
    d = config_on_plan(DATA / f"{name}.config.json", plan, "--max-model-len",
                       str(CASES[name]["max_model_len"]), "--block-size", "16")
    assert d["block_size"] == plan["engine_block_size"]
    assert [g["page_size_bytes"] for g in d["groups"]] == [
        g["page_size_bytes"] for g in plan["groups"]]


def test_lite_at_80_gib() -> None:
    """Refused before; TP 8: 119,111 blocks."""
    assert_config_blocks(DATA / "longcat-flash-lite.config.json", "119,111",
                         "--tensor-parallel-size", "8")


def test_a_longcat_flash_config_naming_no_model_type_is_longcat_flash() -> None:
    """As vLLM reads it (_ARCHITECTURE_TO_MODEL_TYPE): 2 MLA caches a decoder layer, where
    kvcli read 4 full-attention layers (149,970 blocks at 80 GiB for this config)."""
    g = _read("tiny-longcat-no-ngram", model_type=None,
              architectures=["LongcatFlashForCausalLM"])
    assert (g.model_type, g.layer_kinds, g.ngram_tables) == (
        "longcat_flash", ("mla",) * 4, ())


def test_a_config_vllm_cannot_build_is_refused_by_its_key() -> None:
    for edits, field in (({"emb_split_num": None}, "emb_split_num"),
                         ({"emb_neighbor_num": 1}, "emb_neighbor_num"),
                         ({"emb_neighbor_num": 2000}, "emb_neighbor_num")):
        with pytest.raises(InputError) as e:
            _read("tiny-longcat-ngram", **edits)
        assert e.value.field == field
