"""RNJ-1 (Rnj1ForCausalLM, Gemma3TextConfig's keys) against vLLM 0.33.0's own class built
here on the meta device with the Triton backend its chunked layers need
(tests/data/refused_lifted/answers.json): chunked_attention layers are sliding windows of
exactly sliding_window, every other layer (sliding_attention too) full; the KVCacheConfig vLLM
plans; weights and buffers (a RoPE cache a layer type's parameters) of every rank at TP 1-8.
Before: refused by name (and read otherwise as chunked-local layers needing
attention_chunk_size, its sliding_attention layers sliding)."""

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
         if n.split(" ")[0] in ("tiny-rnj1", "rnj-1", "tiny-rnj1-norope", "tiny-rnj1-partial")}
BUILT = {n: c for n, c in CASES.items() if "refused" not in c}


def _read(name: str, **edits: object) -> ModelGeometry:
    cfg = json.loads((DATA / f"{name.split(' ')[0]}.config.json").read_text())
    return read_hf_config({k: v for k, v in {**cfg, **edits}.items() if v is not None},
                          name=name, source="rnj1.json")


@pytest.mark.parametrize("name", sorted(BUILT))
def test_every_cache_spec_is_vllms(name: str) -> None:
    """tiny: layers 0, 1, 4 (chunked) slide 64 tokens, 2, 3 (sliding_attention), 5 full."""
    recorded = CASES[name]["specs"]
    s: Any
    for s, r in zip(layer_specs(_read(name)).values(), recorded, strict=True):
        assert (type(s).__name__, s.block_size, s.num_kv_heads, s.head_size, s.dtype,
                getattr(s, "sliding_window", None), s.page_size_bytes) == (
            r["type"], r["block_size"], r["num_kv_heads"], r["head_size"], r["dtype"],
            r["sliding_window"], r["page_size_bytes"])
    assert _read("tiny-rnj1").layer_kinds == ("sliding", "sliding", "full", "full", "sliding",
                                              "full")


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(BUILT))
def test_each_rank_is_vllms_bytes(name: str, tp: int, rank: int) -> None:
    """tiny's buffers: three RoPE caches (chunked linear x2: 8,192 rows; full; sliding)."""
    g, rec = _read(name), CASES[name]["tp"][str(tp)][rank]
    assert estimate_weights_bytes(g, tp) == sum(rec["param_bytes_by_dtype"].values())
    assert estimate_buffer_bytes(g, tp) == sum(rec["buffer_bytes_by_dtype"].values())


def test_a_tp_vllm_cannot_build_is_refused() -> None:
    """tiny's 4 heads at TP 8: vLLM's AssertionError; kvcli refuses it."""
    assert "AssertionError" in CASES["tiny-rnj1"]["tp"]["8"][0]["refused"]
    with pytest.raises(InputError):
        resolve_kv_cache_config(geometry=_read("tiny-rnj1"), tensor_parallel_size=8,
                                gpu_memory_gib=80, max_model_len=4096)


@pytest.mark.parametrize("name", [n for n in sorted(BUILT) if BUILT[n]["planning"]])
def test_kvcli_config_sizes_as_vllm_planned(name: str) -> None:
    """RNJ-1-like at 60 GiB, 32,768 tokens; tiny at 1 GiB: 43,690 blocks in two groups."""
    (plan,) = CASES[name]["planning"]
    d = config_on_plan(DATA / f"{name}.config.json", plan, "--max-model-len",
                       str(CASES[name]["max_model_len"]))
    assert d["block_size"] == plan["engine_block_size"]
    assert [g["page_size_bytes"] for g in d["groups"]] == [
        g["page_size_bytes"] for g in plan["groups"]]


def test_rnj1_at_80_gib() -> None:
    """Refused before: 156,014 blocks (26 sliding layers in 5 groups, 6 full in one)."""
    assert_config_blocks(DATA / "rnj-1.config.json", "156,014")


def test_vllms_default_backend_refuses_its_chunked_layers() -> None:
    """On CUDA's default pick (FLASH_ATTN) vLLM refuses to build it: `vllm serve
    --attention-backend TRITON_ATTN` serves it, the backend the cases above were built on."""
    assert " ".join(CASES["tiny-rnj1 default"]["refused"]) == (
        "AssertionError: Chunked attention with lookback requires the Triton backend, but got "
        "FLASH_ATTN.")


def test_what_vllm_cannot_build_is_refused_by_its_key() -> None:
    """A chunked layer without its own RoPE (vLLM's TypeError), a per-type dict without the
    full type's (transformers' KeyError), no layer_types."""
    assert CASES["tiny-rnj1-norope"]["refused"] == ["TypeError: unhashable type: 'dict'"]
    assert CASES["tiny-rnj1-partial"]["refused"] == ["KeyError: 'full_attention'"]
    for name, edits, field in (("tiny-rnj1-norope", {}, "rope_parameters"),
                               ("tiny-rnj1-partial", {}, "rope_parameters"),
                               ("tiny-rnj1", {"layer_types": None}, "layer_types")):
        with pytest.raises(InputError) as e:
            _read(name, **edits)
        assert e.value.field == field


def test_kvcli_config_says_which_backend_serves_it() -> None:
    from typer.testing import CliRunner

    from kvcli.app import app
    from kvcore.models.rnj1 import backend_note

    def warnings(config: Path) -> list[str]:
        r = CliRunner().invoke(app, ["config", "--model-config", str(config),
                                     "--gpu-memory-gib", "80", "--json"])
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)["warnings"]

    assert backend_note() in warnings(DATA / "rnj-1.config.json")
    gemma3 = DATA.parent / "perf_cases" / "models" / "gemma-3-27b.config.json"
    assert backend_note() not in warnings(gemma3)     # (Gemma 3's own layers: any backend)
    assert backend_note().startswith("Rnj1ForCausalLM: vLLM 0.33 serves it only with "
                                     "--attention-backend TRITON_ATTN")
