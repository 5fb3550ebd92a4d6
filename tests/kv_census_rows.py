"""The KV-spec census's rows (tests/data/kv_spec_census/answers.json) and one comparable form
of a layer's spec, vLLM's recorded one or kvcli's, for tests/test_kv_spec_census.py."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from kvcore.errors import InputError
from kvcore.models import layer_specs, read_hf_config
from kvcore.specs import (
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    KVCacheSpec,
    MambaSpec,
    MLAAttentionSpec,
    SlidingWindowSpec,
)

DATA = Path(__file__).resolve().parent / "data" / "kv_spec_census"
ANSWERS = json.loads((DATA / "answers.json").read_text())
ROWS = ANSWERS["architectures"]


def _dtypes(text: str) -> tuple[str, ...]:
    return tuple(t.strip().removeprefix("torch.") for t in text.strip("()").split(",") if t.strip())


def vllm_form(s: dict) -> tuple:
    """A recorded spec as (kind, block size, geometry..., page bytes); a kind kvcli has no
    spec for keeps vLLM's type name, so it equals nothing kvcli builds."""
    t, bs, page = s["type"], s["block_size"], s["page_size_bytes"]
    if t in ("FullAttentionSpec", "SlidingWindowSpec", "ChunkedLocalAttentionSpec"):
        if s["head_size_v"] != s["head_size"] or s.get("non_causal") or s["kv_quant_mode"]:
            return (t, "head_size_v", s["head_size_v"], "non_causal", s.get("non_causal"))
        extra = {"FullAttentionSpec": ("sliding_window", "attention_chunk_size"),
                 "SlidingWindowSpec": ("sliding_window", "extra_retained_tokens"),
                 "ChunkedLocalAttentionSpec": ("attention_chunk_size",)}[t]
        extra = tuple(s[k] for k in extra)
        return (t, bs, s["num_kv_heads"], s["head_size"], s["dtype"], *extra, page)
    if t == "MLAAttentionSpec":
        return (t, bs, s["num_kv_heads"], s["head_size"], s["dtype"], s["cache_dtype_str"],
                page)
    if t == "MambaSpec":
        return (t, bs, tuple(ast.literal_eval(s["shapes"])), _dtypes(s["dtypes"]), page)
    return (t, bs, page)


def kvcli_form(s: KVCacheSpec) -> tuple:
    bs, page = s.block_size, s.page_size_bytes
    if isinstance(s, MLAAttentionSpec):
        return ("MLAAttentionSpec", bs, s.num_kv_heads, s.head_size, s.dtype,
                s.cache_dtype_str, page)
    if isinstance(s, FullAttentionSpec):
        return ("FullAttentionSpec", bs, s.num_kv_heads, s.head_size, s.dtype,
                s.sliding_window, s.attention_chunk_size, page)
    if isinstance(s, SlidingWindowSpec):
        return ("SlidingWindowSpec", bs, s.num_kv_heads, s.head_size, s.dtype,
                s.sliding_window, 0, page)
    if isinstance(s, ChunkedLocalAttentionSpec):
        return ("ChunkedLocalAttentionSpec", bs, s.num_kv_heads, s.head_size, s.dtype,
                s.attention_chunk_size, page)
    if isinstance(s, MambaSpec):
        return ("MambaSpec", bs, tuple(s.shapes), tuple(s.dtypes), page)
    return (type(s).__name__, bs, page)


def vllm_specs(row: dict) -> list[tuple]:
    return [vllm_form(s) for s in row["specs"]]


def kvcli_specs(row: dict, arch: str) -> list[tuple] | InputError:
    """kvcli's specs for the row's config (as `kvcli config --model-config FILE` reads it), at
    vLLM's max_model_len and block size 16 (raised for hybrids as vLLM raises it), or the
    InputError it refuses the config with."""
    try:
        g = read_hf_config(row["config"], source=f"{arch}.config.json")
    except InputError as e:
        return e
    specs = layer_specs(g, max_model_len=row["max_model_len"])
    return [kvcli_form(s) for s in specs.values()]


def same(a: list[tuple], b: list[tuple]) -> bool:
    """The same specs, and the attention layers' in the same order (Mamba mixers may be
    registered beside their layer's attention in either order: Falcon-H1's)."""
    def attn(x: list[tuple]) -> list[tuple]:
        return [t for t in x if t[0] != "MambaSpec"]
    return sorted(map(repr, a)) == sorted(map(repr, b)) and attn(a) == attn(b)
