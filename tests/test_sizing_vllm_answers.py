"""kvcore's sizing against answers recorded from the real vLLM 0.33.0 planning code.

tests/data/sizing_vllm/cases.json holds, per case, the per-layer specs, the memory and the
engine limits, and what vLLM 0.33's `get_kv_cache_groups`, `get_kv_cache_config_from_groups`,
`get_max_concurrency_for_kv_cache_config`, `get_kv_cache_capacity` and the group-aware
max_model_len estimate answered (recorded with tests/data/sizing_vllm/record_vllm_answers.py
in the oracle's environment; the test itself needs no vLLM).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.group_specs import UniformTypeKVCacheSpecs
from kvcore.sizing import (
    estimate_max_model_len_from_groups,
    get_kv_cache_groups,
    kv_cache_config_from_groups,
    kv_cache_tokens,
    max_concurrency,
)
from kvcore.sizing.config import bytes_per_block
from kvcore.specs import (
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    MambaSpec,
    SizingContext,
    SlidingWindowSpec,
)

CASES = json.loads((Path(__file__).resolve().parent / "data" / "sizing_vllm" / "cases.json")
                   .read_text())["cases"]


def build(j: dict):
    if j["type"] == "mamba":
        return MambaSpec(j["block_size"], shapes=tuple(map(tuple, j["shapes"])),
                         dtypes=tuple(j["dtypes"]), page_size_padded=j["page_size_padded"],
                         **{f: j[f] for f in ("num_speculative_blocks",
                                              "num_prefill_checkpoint_blocks",
                                              "prefill_checkpoint_alignment") if f in j})
    args = (j["block_size"], j["num_kv_heads"], j["head_size"], j["dtype"])
    if j["type"] == "sliding_window":
        return SlidingWindowSpec(*args, sliding_window=j["sliding_window"])
    if j["type"] == "chunked_local":
        return ChunkedLocalAttentionSpec(*args, attention_chunk_size=j["attention_chunk_size"])
    return FullAttentionSpec(*args)


SPEC_NAMES = {FullAttentionSpec: "FullAttentionSpec", SlidingWindowSpec: "SlidingWindowSpec",
              ChunkedLocalAttentionSpec: "ChunkedLocalAttentionSpec", MambaSpec: "MambaSpec",
              UniformTypeKVCacheSpecs: "UniformTypeKVCacheSpecs"}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_same_answers_as_vllm(case) -> None:
    specs = {name: build(j) for name, j in case["layers"].items()}
    ctx = SizingContext(max_model_len=case["max_model_len"],
                        max_num_batched_tokens=case["max_num_batched_tokens"],
                        max_concurrent_batches=case["max_concurrent_batches"],
                        mamba_cache_mode=case.get("mamba_cache_mode", "align"))
    groups = get_kv_cache_groups(specs, disable_hybrid=case["disable_hybrid"])
    exp = case["expected"]
    assert [{"layers": list(g.layer_names), "block_size": g.kv_cache_spec.block_size,
             "page_size_bytes": g.kv_cache_spec.page_size_bytes,
             "spec": SPEC_NAMES[type(g.kv_cache_spec)]} for g in groups] == exp["groups"]
    cfg = kv_cache_config_from_groups(groups, case["available"])
    assert cfg.num_blocks == exp["num_blocks"]
    assert max_concurrency(groups, cfg.num_blocks, ctx) == exp["max_concurrency"]
    assert kv_cache_tokens(groups, cfg.num_blocks, ctx) == exp["kv_cache_tokens"]
    usable = case["available"] - bytes_per_block(groups)
    assert estimate_max_model_len_from_groups(groups, ctx, usable) == exp["max_model_len_fits"]


def test_the_recorded_cases_cover_every_kind() -> None:
    kinds = {g["spec"] for c in CASES for g in c["expected"]["groups"]}
    assert {"FullAttentionSpec", "SlidingWindowSpec", "ChunkedLocalAttentionSpec", "MambaSpec",
            "UniformTypeKVCacheSpecs"} <= kinds
