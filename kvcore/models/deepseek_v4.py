"""DeepSeek-V4 (vLLM 0.33's DeepseekV4ForCausalLM, model_type deepseek_v4): its config read
into what the KV cache specs and the weights estimate need.

Every decoder layer is one kind, ``dsv4`` (`ModelGeometry.layer_kinds`), told apart by its
compress ratio: vLLM's attention.py takes ``max(1, compress_rates.get(layer_types[i], 0))``,
so a layer type the rates do not name is 1 (a sliding window alone), 4 is C4 (compressed
sparse attention: an indexer beside it) and 128 heavily compressed attention. vLLM's kernels
take no other ratio (common/ops/save_partial_states.py refuses it), so kvcli refuses it here.
The caches these make: `kvcore.models.deepseek_v4_specs`; recorded from vLLM in
tests/data/deepseek_v4/.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvcore.errors import InputError, clipped

DEEPSEEK_V4 = "deepseek_v4"
V4_KIND = "dsv4"    # (the one layer kind of a DeepSeek-V4 model)
# the ratios vLLM's compressor kernels take (1: no compressor)
COMPRESS_RATIOS = (1, 4, 128)
# the ratio whose layers run sparse attention through an indexer (attention.py: C4A only)
INDEXED_RATIO = 4
# hash-routed MoE layers first where a config lists no mlp_layer_types (DeepseekV4Config's
# default_num_hash_layers, transformers 5.20)
DEFAULT_HASH_LAYERS = 3


@dataclass(frozen=True, slots=True)
class V4Geometry:
    """What DeepSeek-V4's layers hold beyond the common keys (head_dim, heads, the window
    are `ModelGeometry`'s: its 512-wide latent head, 64 heads, ``sliding_window``)."""
    compress_ratios: tuple[int, ...]    # per decoder layer: 1, 4 or 128
    hash_moe_layers: tuple[bool, ...]   # per decoder layer: mlp_layer_types "hash_moe"
    qk_rope_head_dim: int       # (the latent's RoPE part: 64 of its 512)
    q_lora_rank: int
    o_groups: int               # the grouped output LoRA: wo_a's groups and their rank
    o_lora_rank: int
    index_n_heads: int          # the C4 layers' indexer: its heads, their width, its top-k
    index_head_dim: int
    index_topk: int
    hc_mult: int                # hyper-connections: copies of the residual stream

    def has_indexer(self, layer: int) -> bool:
        return self.compress_ratios[layer] == INDEXED_RATIO


def _type_list(c: dict[str, Any], key: str, n: int, source: str) -> list[str]:
    types = c.get(key)
    if not (isinstance(types, list) and len(types) == n and all(isinstance(t, str)
                                                                for t in types)):
        raise InputError(f"must list {n} layer types (num_hidden_layers), got {clipped(types)}",
                         path=source or None, field=key)
    return types


def _ratios(c: dict[str, Any], n: int, source: str) -> tuple[int, ...]:
    rates = c.get("compress_rates")
    if not isinstance(rates, dict):
        raise InputError(f"must map layer types to compress ratios, got {clipped(rates)}",
                         path=source or None, field="compress_rates")
    out = []
    for t in _type_list(c, "layer_types", n, source):
        r = rates.get(t, 0)
        if isinstance(r, bool) or not isinstance(r, int) or max(1, r) not in COMPRESS_RATIOS:
            raise InputError(f"{t!r}: compress ratio {clipped(r)}; vLLM 0.33's DeepSeek-V4 "
                             "kernels take 4 and 128 (0 or 1: no compressor)",
                             path=source or None, field="compress_rates")
        out.append(max(1, r))
    return tuple(out)


def _mlp_types(c: dict[str, Any], n: int, source: str) -> list[str]:
    """``mlp_layer_types``, else as DeepseekV4Config makes it: its first ``num_hash_layers``
    (the legacy key; else 3) hash-routed (tests/data/deepseek_v4: tiny-dsv4-nomlp, -hash1)."""
    if c.get("mlp_layer_types") is not None:
        return _type_list(c, "mlp_layer_types", n, source)
    hashed = c.get("num_hash_layers")
    hashed = DEFAULT_HASH_LAYERS if hashed is None else hashed
    if isinstance(hashed, bool) or not isinstance(hashed, int) or hashed < 0:
        raise InputError(f"must be a layer count, got {clipped(hashed)}", path=source or None,
                         field="num_hash_layers")
    return ["hash_moe"] * min(n, hashed) + ["moe"] * max(0, n - hashed)


def read_v4(c: dict[str, Any], n: int, get_dim: Any, source: str) -> V4Geometry:
    """A deepseek_v4 config's own keys (``get_dim``: hf_config's reader of a size >= 1)."""
    mlp = _mlp_types(c, n, source)
    return V4Geometry(
        compress_ratios=_ratios(c, n, source), hash_moe_layers=tuple(t == "hash_moe" for t in mlp),
        qk_rope_head_dim=get_dim("qk_rope_head_dim", required=True),
        q_lora_rank=get_dim("q_lora_rank", required=True),
        o_groups=get_dim("o_groups", required=True), o_lora_rank=get_dim("o_lora_rank",
                                                                         required=True),
        index_n_heads=get_dim("index_n_heads", required=True),
        index_head_dim=get_dim("index_head_dim", required=True),
        index_topk=get_dim("index_topk", required=True), hc_mult=get_dim("hc_mult",
                                                                         required=True))


# The KV cache layouts a worker reports (most preferred first): where it holds a C4 layer,
# its indexer's backend's two (v1/attention/backends/mla/indexer.py); else no backend of its
# declares any, and it reports vLLM's default preference
INDEXED_LAYOUTS = ["BLHNC", "BLNHC"]
ANY_LAYOUT = ["LBNHC", "LBHNC", "BLNHC", "BLHNC", "BHLNC", "LHBNC"]


def stage_layouts_refusal(v4: V4Geometry, stages: list[range], tp: int) -> str | None:
    """vLLM's engine core asserts every worker reports the same layouts
    (`resolve_kv_cache_layout`): pipeline stages of which some hold a C4 layer and some none
    (tiny-dsv4 on 4 stages) stop it there, in these words; None where they agree."""
    lists = [INDEXED_LAYOUTS if any(v4.has_indexer(i) for i in r) else ANY_LAYOUT
             for r in stages for _ in range(tp)]     # (one a worker: TP ranks within a stage)
    if all(x == lists[0] for x in lists):
        return None
    return f"Workers disagree on supported KV cache layouts: {lists}."


def unindexed_refused_layer(v4: V4Geometry, pages: dict[str, int]) -> str | None:
    """The layer at which vLLM stops a DeepSeek-V4 without a C4 layer whose pages are of several
    sizes (``pages``: a layer's name to its page, in the runner's order): no backend declares the
    block-outermost layout, so vLLM unifies the pages layer-outer and cannot pad an MLA page that
    does not divide the largest (`unify_kv_cache_spec_page_size`, whose words
    `kvcore.sizing.grouping.unpaddable_page_words` owns; tiny-dsv4-var2, recorded); None
    otherwise."""
    if any(r == INDEXED_RATIO for r in v4.compress_ratios) or len(set(pages.values())) < 2:
        return None
    top = max(pages.values())
    return next(n for n, p in pages.items() if top % p)
