"""Gemma 2 and Cohere2 (Command R7B / Command A) against vLLM 0.33.0's own answers.

Their published config.json files have no ``layer_types``: the transformers config class
derives it (Gemma 2: even layers slide; Cohere2: 3 sliding then 1 full, ``sliding_window_pattern``
4), vLLM's Cohere2 layers see ``sliding_window + 1`` tokens, and Gemma 2's float32 checkpoint
runs in bfloat16 under ``--dtype auto``. Before these were read, kvcli made every layer of both
slide (one sliding group, no full layer), gave Cohere2 a window of 4,096 and Gemma 2 a float32
cache (twice the bytes). tests/data/sliding/answers.json: record_sliding_answers.py there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.models import layer_specs, load_hf_config, read_hf_config
from kvcore.sizing import get_kv_cache_groups, kv_cache_config_from_groups
from kvcore.sizing.config import capacity
from kvcore.specs import SizingContext, SlidingWindowSpec

DATA = Path(__file__).resolve().parent / "data" / "sliding"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
KINDS = {"sliding_attention": "sliding", "full_attention": "full"}
SPECS = {"sliding_window": "SlidingWindowSpec", "full": "FullAttentionSpec"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['config']}-tp{c['tp']}")
def test_layers_and_planning_as_vllm(case) -> None:
    g = read_hf_config(load_hf_config(DATA / f"{case['config']}.config.json"))
    m = case["model"]
    assert g.layer_kinds == tuple(KINDS[t] for t in m["layer_types"])
    assert (g.dtype, g.head_dim, g.sliding_window) == (m["dtype"], m["head_size"],
                                                       m["sliding_window"])
    specs = layer_specs(g, tp=case["tp"], max_model_len=case["max_model_len"])
    assert {s.num_kv_heads for s in specs.values()} == {m["num_kv_heads_per_rank"]}
    ctx = SizingContext(max_model_len=case["max_model_len"],
                        max_num_batched_tokens=case["max_num_batched_tokens"],
                        max_concurrent_batches=2)
    groups = get_kv_cache_groups(specs)
    config = kv_cache_config_from_groups(groups, case["available"])
    cap = capacity(config, ctx, case["available"], case["max_model_len"])
    exp = case["expected"]
    assert [{"layers": list(gr.layer_names), "spec": SPECS[gr.kv_cache_spec.kind],
             "block_size": gr.kv_cache_spec.block_size,
             "page_size_bytes": gr.kv_cache_spec.page_size_bytes} for gr in groups] \
        == exp["groups"]
    assert {gr.kv_cache_spec.sliding_window for gr in groups
            if isinstance(gr.kv_cache_spec, SlidingWindowSpec)} == {m["sliding_window"]}
    assert (config.num_blocks, cap.max_concurrency, cap.kv_cache_tokens,
            cap.max_model_len_fits) == (exp["num_blocks"], exp["max_concurrency"],
                                        exp["kv_cache_tokens"], exp["max_model_len_fits"])


def test_float32_checkpoint_keeps_an_explicit_dtype() -> None:
    """--dtype auto runs Gemma 2's float32 checkpoint in bfloat16; --dtype float32 asks for
    float32 and gets a float32 cache."""
    from kvcore.sizing import resolve_kv_cache_config

    path = str(DATA / "gemma-2-9b.config.json")
    auto = resolve_kv_cache_config(model_config=path, num_blocks=10, check_memory=False)
    f32 = resolve_kv_cache_config(model_config=path, num_blocks=10, dtype="float32",
                                  check_memory=False)
    assert (auto.kv_cache_dtype, f32.kv_cache_dtype) == ("bfloat16", "float32")
    assert f32.bytes_per_block == 2 * auto.bytes_per_block
