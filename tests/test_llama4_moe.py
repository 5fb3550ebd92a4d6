"""Llama 4's interleaved dense and MoE layers (Maverick's interleave_moe_layer_step 2) against
vLLM 0.33.0's own classes, built on the meta device at TP 1, 2, 4 and 8, every rank, with the
vision tower and under --language-model-only (tests/data/weights_census/llama4_moe/answers.json,
recorded by record_llama4_moe.py there): the bytes a rank holds, its buffers, its parameters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import (
    case_geometry,
)
from tests.kv_census_rows import kvcli_specs, same, vllm_specs

DATA = Path(__file__).parent / "data" / "weights_census" / "llama4_moe"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
KV_SPECS = json.loads((DATA / "kv_specs.json").read_text())["configs"]


def _geometry(name: str):
    return case_geometry(DATA, CASES, name)


@pytest.mark.parametrize("base", sorted(KV_SPECS))
def test_kv_specs_equal_vllms(base: str) -> None:
    """The feed-forward layout moves no KV spec: Maverick's 36 chunked layers (8,192 tokens) and
    12 NoPE ones, 8 KV heads of 128, at TP 1 as vLLM lists them."""
    row = {**KV_SPECS[base], "config": json.loads((DATA / f"{base}.config.json").read_text())}
    ours = kvcli_specs(row, row["class"])
    assert not isinstance(ours, InputError) and same(ours, vllm_specs(row))
    assert len(ours) == (48 if base == "llama-4-maverick" else 6)


@pytest.mark.parametrize(("base", "moe", "billed"), [
    ("llama-4-maverick", (False, True) * 24, 24),
    ("tiny-llama-4-step1", (True,) * 6, 6),
    ("tiny-llama-4-step2", (False, True) * 3, 3),
    ("tiny-llama-4-step3", (False, False, True) * 2, 2),
    # (its moe_layers [0, 1, 2] is transformers' list: vLLM's layers read the step)
    ("tiny-llama-4-step2-moe-layers", (False, True) * 3, 3),
    # step 0: every layer dense, but perf.py's parser skips a step not above 0 and bills its
    # default, every layer of a model with experts
    ("tiny-llama-4-step0", (False,) * 6, 6),
    # no num_local_experts, step or intermediate_size_mlp: Llama4TextConfig's 16, 1, 16,384
    ("tiny-llama-4-class-defaults", (True,) * 6, 6),
])
def test_moe_layers_follow_interleave_moe_layer_step(base: str, moe: tuple, billed: int) -> None:
    g = _geometry(base)
    assert g.moe_layers == moe and g.counted_moe_layers == billed
    # dense layers intermediate_size_mlp wide, experts intermediate_size; perf.py's width the
    # latter
    assert (g.intermediate_size, g.moe_intermediate_size, g.perf_intermediate) == (
        (16384, 8192, 8192) if base == "llama-4-maverick" else
        (16384, 512, 512) if base == "tiny-llama-4-class-defaults" else (768, 512, 512))
    assert g.num_experts == (128 if base == "llama-4-maverick" else
                             16 if base == "tiny-llama-4-class-defaults" else 8)


def test_maverick_at_tp8() -> None:
    """Maverick's 400B parameters (read as all MoE: 785B, 182.86 GiB a rank) at TP 8: its
    93.53 GiB a rank leave nothing on 80 GiB, and on an H200's 141 GiB 35.94 GiB of KV cache
    (36 chunked layers of 8,192 tokens beside 12 global ones, one KV head a rank)."""
    g = _geometry("llama-4-maverick")
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=g, tensor_parallel_size=8, gpu_memory_gib=80)
    assert "weights 93.53 GiB (estimated)" in e.value.message
    assert e.value.message.endswith("short by 20.18 GiB")
    r = resolve_kv_cache_config(geometry=g, tensor_parallel_size=8, gpu_memory_gib=141)
    assert r.config.num_blocks == 392_566


def test_the_clock_runs_maverick_as_built() -> None:
    """The clock's own view (perf.py's stays f901's): 24 dense layers 16,384 wide and 24 MoE
    layers whose shared expert (8,192) and router weights are read every step, at TP 8 (read
    before as 48 MoE layers, no dense one, no shared expert: 62,914,560 B of router alone)."""
    from kvcore.clock.work import work_groups, work_shape

    groups = {gr.name: gr for gr in work_groups(work_shape(_geometry("llama-4-maverick"), tp=8))}
    assert (groups["mlp"].layers, groups["mlp"].bytes0) == (24, 3 * 5120 * 2048 * 2 * 24)
    assert (groups["moe"].layers, groups["moe"].bytes0) == (
        24, (3 * 5120 * 1024 + 5120 * 128) * 2 * 24)


def test_explain_names_where_the_clock_departs_from_perf_py() -> None:
    from kvcore.clock.batch import StepBatch
    from kvcore.clock.explain import differences
    from kvcore.clock.vllm_count import vllm_shape

    g = _geometry("llama-4-maverick")
    notes = differences(g, vllm_shape(g, tp=8), StepBatch([(1, 100, False)]))
    assert ("Llama 4: the clock runs each MoE layer's shared expert (8,192 wide) and its dense "
            "layers at intermediate_size_mlp (16,384); vLLM bills no shared expert and dense "
            "layers at intermediate_size (8,192)") in notes
