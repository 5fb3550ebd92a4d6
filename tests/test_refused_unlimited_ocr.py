"""Unlimited-OCR (UnlimitedOCRForCausalLM) against vLLM 0.33.0's own class built here on the
meta device (tests/data/refused_lifted/answers.json): DeepSeek-OCR's class whole (its
DeepEncoder tower, projector and DeepSeek-V2 MoE language model with plain multi-head
attention, heads hidden / heads wide), each attention layer an RSWASpec of the config's
rswa_window (128 where unset) under RSWAManager; prefix caching off whatever is asked; the
KVCacheConfig vLLM plans; weights and buffers of every rank at TP 1-8. Before: refused by name
(unlimited_ocr.py's UnlimitedOCRForCausalLMConfig, rswa_attention.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models.buffers import estimate_buffer_bytes
from kvcore.models.geometry import ModelGeometry
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_weights_bytes
from kvcore.models.worker_specs import layer_specs
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import assert_config_blocks, built_ranks, config_on_plan, refused_tps

DATA = Path(__file__).parent / "data" / "refused_lifted"
CASES = {n: c for n, c in json.loads((DATA / "answers.json").read_text())["cases"].items()
         if "unlimited-ocr" in n}


def _read(name: str, **edits: object) -> ModelGeometry:
    cfg = json.loads((DATA / f"{name}.config.json").read_text())
    return read_hf_config({**cfg, **edits}, name=name, source="uocr.json")


def test_the_recorded_cases() -> None:
    """17 ranks built, 4 TP sizes refused."""
    assert (len(built_ranks(CASES)), len(refused_tps(CASES))) == (17, 4)
    assert sorted(CASES) == ["tiny-unlimited-ocr", "tiny-unlimited-ocr-nowindow",
                             "unlimited-ocr"]
    for c in CASES.values():
        assert c["class"] == "UnlimitedOCRForCausalLM"
        # (vLLM's config hook: caching off, the backend TRITON_ATTN without FA4)
        assert c["enable_prefix_caching"] is False
        assert c["configured_backend"].endswith("TRITON_ATTN")
        assert [p["managers"] for p in c["planning"]] == [["RSWAManager"]] * len(c["planning"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_cache_spec_is_vllms(name: str) -> None:
    """tiny: 3 layers of 4 heads of 64 (256 / 4), window 32, a page of 16,384 B; the
    published-like: 12 of 10 heads of 128, window 128, 81,920 B; no rswa_window: 128."""
    recorded = {r["name"].removeprefix("language_model.model.").removesuffix(".self_attn.attn"):
                r for r in CASES[name]["specs"]}
    ours = layer_specs(_read(name))
    assert list(ours) == list(recorded)
    s: Any
    for layer, s in ours.items():
        r = recorded[layer]
        assert (type(s).__name__, s.block_size, s.num_kv_heads, s.head_size, s.dtype,
                s.rswa_window, s.page_size_bytes) == (
            r["type"], r["block_size"], r["num_kv_heads"], r["head_size"], r["dtype"],
            r["rswa_window"], r["page_size_bytes"])
    assert [r["rswa_window"] for r in CASES["tiny-unlimited-ocr-nowindow"]["specs"]] == [128] * 3


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES))
def test_each_rank_is_vllms_bytes(name: str, tp: int, rank: int) -> None:
    """The published-like at TP 1: 6,672,212,480 B of weights (its tower and projector with
    them), 2,099,400 B of buffers (CLIP's position ids, a RoPE cache, 16 B of scales a layer)."""
    g, rec = _read(name), CASES[name]["tp"][str(tp)][rank]
    assert estimate_weights_bytes(g, tp) == sum(rec["param_bytes_by_dtype"].values())
    assert estimate_buffer_bytes(g, tp) == sum(rec["buffer_bytes_by_dtype"].values())


@pytest.mark.parametrize(("name", "tp"), refused_tps(CASES))
def test_a_tp_vllm_cannot_build_is_refused(name: str, tp: int) -> None:
    """Heads TP does not divide (4 at 8, 10 at 4 and 8): vLLM's AssertionError; kvcli's too."""
    assert "AssertionError" in CASES[name]["tp"][str(tp)][0]["refused"][0]
    with pytest.raises(InputError):
        resolve_kv_cache_config(geometry=_read(name), tensor_parallel_size=tp,
                                gpu_memory_gib=80, max_model_len=4096)


@pytest.mark.parametrize(("name", "i"), [(n, i) for n, c in sorted(CASES.items())
                                         for i in range(len(c["planning"]))])
def test_kvcli_config_sizes_as_vllm_planned(name: str, i: int) -> None:
    """tiny at 1 GiB: 21,845 blocks; the published-like at 20 GiB and 60 GiB, 8,192 tokens:
    21,845 and 65,536 (983,040 B a block), one rswa group."""
    plan = CASES[name]["planning"][i]
    d = config_on_plan(DATA / f"{name}.config.json", plan, "--max-model-len",
                       str(CASES[name]["max_model_len"]))
    assert d["block_size"] == plan["engine_block_size"] == 16
    assert [(g["kind"], g["page_size_bytes"]) for g in d["groups"]] == [
        ("rswa", g["page_size_bytes"]) for g in plan["groups"]]


def test_the_published_like_at_80_gib() -> None:
    """Refused before: 73,601 blocks (12 layers x 81,920 B; 6.21 GiB of weights, tower in)."""
    assert_config_blocks(DATA / "unlimited-ocr.config.json", "73,601")


@pytest.mark.parametrize("args", [(), ("--enable-prefix-caching",)])
def test_prefix_caching_is_off_whatever_is_asked(args: tuple[str, ...]) -> None:
    g = _read("tiny-unlimited-ocr")
    assert resolve_kv_cache_config(geometry=g, num_blocks=300, max_model_len=4096,
                                   enable_prefix_caching=True).enable_prefix_caching is False
    out = CliRunner().invoke(app, ["config", "--model-config",
                                   str(DATA / "tiny-unlimited-ocr.config.json"),
                                   "--gpu-memory-gib", "8", *args])
    assert out.exit_code == 0, out.output
    assert "turns prefix caching off for UnlimitedOCRForCausalLM whatever is asked" in out.output


@pytest.mark.parametrize(("edits", "field"), [
    ({"rswa_window": 0}, "rswa_window"), ({"rswa_window": "128"}, "rswa_window"),
    ({"rswa_window": True}, "rswa_window"),
    ({"language_config": {}}, "language_config.qk_rope_head_dim")])
def test_what_kvcli_does_not_model_is_refused_by_its_key(edits: dict, field: str) -> None:
    """A window no manager could keep, and an MLA language model (whose layers never read the
    window: unrecorded)."""
    with pytest.raises(InputError) as e:
        _read("tiny-unlimited-ocr", **edits)
    assert e.value.field == field
    assert "\n" not in str(e.value)


def test_a_null_window_is_the_default() -> None:
    assert _read("tiny-unlimited-ocr", rswa_window=None).rswa_window == 128


def test_the_roofline_clock_does_not_time_rswa(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"timestamp": 0, "input_length": 32, "output_length": 2}) + "\n")
    r = CliRunner().invoke(app, ["replay", str(trace), "--model-config",
                                 str(DATA / "tiny-unlimited-ocr.config.json"), "--gpu-memory-gib",
                                 "8", "--clock", "roofline", "--gpu", "h100"])
    assert r.exit_code == 2
    assert "R-SWA attention" in r.output
