"""Qwen2-VL's, Qwen2.5-VL's and Qwen3-VL's vision towers in the sizing, beyond the per-rank census
(tests/test_weights_census.py, tests/test_buffers_census.py): Qwen3-VL's deepstack scratch as
vLLM 0.33 allocates it (tests/data/qwen_vl/deepstack.json, recorded by record_deepstack.py
there), Qwen2.5-VL's vision MLP refused at TP 8 unless the tower is held whole, and
`kvcli config`'s figures for Qwen2.5-VL-7B on 80 GiB."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.mm_options import mm_options
from kvcore.models.buffers import estimate_buffer_bytes
from kvcore.models.hf_config import read_hf_config
from kvcore.models.mm_serving import apply_mm
from kvcore.sizing.resolve import resolve_kv_cache_config

DATA = Path(__file__).parent / "data" / "qwen_vl"
DEEPSTACK = json.loads((DATA / "deepstack.json").read_text())


def _geometry(name: str):
    return read_hf_config(json.loads((DATA / f"{name}.config.json").read_text()), name=name)


@pytest.mark.parametrize("name", sorted(DEEPSTACK))
def test_deepstack_scratch_is_vllms(name: str) -> None:
    g = _geometry(name)
    for rec in DEEPSTACK[name]:
        tokens = rec["max_num_batched_tokens"]
        opts = mm_options(None, rec["mm_options"].get("language_model_only", False), None)
        built = apply_mm(g, opts)[0]
        scratch = estimate_buffer_bytes(built, 1, batched_tokens=tokens) \
            - estimate_buffer_bytes(built, 1)
        assert scratch == rec["bytes"], rec
    # (whole on every rank: a plain tensor, not split)
    assert estimate_buffer_bytes(g, 4, batched_tokens=8192) - estimate_buffer_bytes(g, 4) \
        == DEEPSTACK[name][1]["bytes"]


def test_qwen2_5_vl_s_vision_mlp_refuses_tp_8_unless_held_whole() -> None:
    g = _geometry("qwen2.5-vl-3b-instruct")
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=g, tensor_parallel_size=8, gpu_memory_gib=80,
                                max_model_len=4096)
    assert e.value.message == (
        "qwen2.5-vl-3b-instruct's vision tower's MLP is 3420 wide (a rank's shard of it must be "
        "whole), which must be divisible by it, as vLLM requires; got 8")
    assert e.value.field == "tensor_parallel_size"
    r = resolve_kv_cache_config(geometry=g, tensor_parallel_size=8, gpu_memory_gib=80,
                                max_model_len=4096, mm=mm_options(None, False, "data"))
    assert r.mm is not None and r.mm.mode == "data"
    # (72B's is 3,456 wide: it builds at TP 8)
    resolve_kv_cache_config(geometry=_geometry("qwen2.5-vl-72b-instruct"),
                            tensor_parallel_size=8, gpu_memory_gib=80, max_model_len=4096)


def test_qwen2_5_vl_7b_on_80_gib() -> None:
    res = CliRunner().invoke(app, ["config", "--model-config",
                                   str(DATA / "qwen2.5-vl-7b-instruct.config.json"),
                                   "--gpu-memory-gib", "80", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    # (69,496 blocks with the language model alone, its QKV bias and MRoPE's 4 x cache left out)
    assert doc["num_blocks"] == 67_913 and doc["warnings"] == []
    assert doc["multimodal"]["vision_weights_bytes"] == 2 * 676_550_144
    assert doc["memory"]["buffers_bytes"] == 131_727_808
