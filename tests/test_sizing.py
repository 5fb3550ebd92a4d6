"""KV cache config generation: grouping, num_blocks, tensor sharing, concurrency, estimates.

The cases of vLLM's test_get_kv_cache_config_one_worker, test_estimate_max_model_len and
test_get_max_concurrency_for_kv_cache_config (reference §9.6, §10.2), in our words.
"""

from __future__ import annotations

import pytest

from kvcore.errors import InputError
from kvcore.group_specs import UniformTypeKVCacheSpecs
from kvcore.sizing import (
    NotEnoughMemory,
    PageSizeError,
    check_enough_memory,
    estimate_max_model_len,
    get_kv_cache_groups,
    kv_cache_config_from_groups,
    kv_cache_tokens,
    max_concurrency,
    resolve_kv_cache_config,
)
from kvcore.specs import FullAttentionSpec, SizingContext, SlidingWindowSpec

M = 16 * 2 * 64 * 4 * 2  # page of: block 16, 2 KV heads, head 64, float32, K and V


def full(head=64):
    return FullAttentionSpec(16, 2, head, "float32")


def swa(head=64, window=1):
    return SlidingWindowSpec(16, 2, head, "float32", sliding_window=window)


def config(specs: dict, memory: int, **kw):
    groups = get_kv_cache_groups(specs, **{k: v for k, v in kw.items() if k != "override"})
    return kv_cache_config_from_groups(groups, memory, kw.get("override"))


def names(cfg):
    return [list(g.layer_names) for g in cfg.kv_cache_groups]


def sharing(cfg):
    return [list(t.shared_by) for t in cfg.kv_cache_tensors]


def test_two_full_layers() -> None:
    cfg = config({"l1": full(), "l2": full()}, 2 * 32 * M)
    assert cfg.num_blocks == 32
    assert names(cfg) == [["l1", "l2"]]
    assert sharing(cfg) == [["l1"], ["l2"]]
    assert [t.size for t in cfg.kv_cache_tensors] == [32 * M, 32 * M]


def test_two_swa_layers() -> None:
    cfg = config({"l1": swa(), "l2": swa()}, 2 * 32 * M)
    assert cfg.num_blocks == 32 and names(cfg) == [["l1", "l2"]]


def test_full_and_swa_hybrid_disabled() -> None:
    cfg = config({"l1": full(), "l2": swa()}, 2 * 32 * M, disable_hybrid=True)
    assert cfg.num_blocks == 32
    assert cfg.kv_cache_groups[0].kv_cache_spec == FullAttentionSpec(16, 2, 64, "float32",
                                                                     sliding_window=1)


def test_hybrid_disabled_promotes_a_local_layer_at_the_full_layers_block() -> None:
    # (vLLM's _promote_local_kv_cache_specs: the full layers' one block size, the padded page
    # scaled to it; a sliding layer at block 32 and a chunked one at 64 beside full ones at 16)
    from kvcore.sizing.grouping import unify_hybrid_kv_cache_specs
    from kvcore.specs import ChunkedLocalAttentionSpec

    out = unify_hybrid_kv_cache_specs({
        "l1": full(), "l2": SlidingWindowSpec(32, 2, 64, "float32", sliding_window=8),
        "l3": ChunkedLocalAttentionSpec(64, 2, 64, "float32", 5 * M, attention_chunk_size=32)})
    assert out == {"l1": full(), "l2": FullAttentionSpec(16, 2, 64, "float32", sliding_window=8),
                   "l3": FullAttentionSpec(16, 2, 64, "float32", 5 * M,
                                           attention_chunk_size=32)}


def test_full_and_swa_hybrid_share_one_tensor() -> None:
    cfg = config({"l1": full(), "l2": swa()}, 2 * 32 * M)
    assert names(cfg) == [["l1"], ["l2"]]
    assert cfg.num_blocks == 64
    assert sharing(cfg) == [["l1", "l2"]]
    assert cfg.kv_cache_tensors[0].size == 64 * M


def test_two_full_four_swa() -> None:
    specs = {"l1": full(), "l2": full(), "l3": swa(), "l4": swa(), "l5": swa(), "l6": swa()}
    cfg = config(specs, 2 * 32 * M)
    assert names(cfg) == [["l1", "l2"], ["l3", "l5"], ["l4", "l6"]]
    assert cfg.num_blocks == 32
    assert sharing(cfg) == [["l1", "l3", "l4"], ["l2", "l5", "l6"]]


def test_three_full_seven_swa() -> None:
    specs = {f"l{i}": (full() if i <= 3 else swa()) for i in range(1, 11)}
    cfg = config(specs, 3 * 32 * M)
    assert names(cfg) == [["l1", "l2", "l3"], ["l4", "l7", "l10"], ["l5", "l8"], ["l6", "l9"]]
    assert cfg.num_blocks == 32
    assert sharing(cfg) == [["l1", "l4", "l5", "l6"], ["l2", "l7", "l8", "l9"], ["l3", "l10"]]


def test_six_full_five_swa_pads_to_one_group_each() -> None:
    # 6 < 5 * 1.5: the group size is 6 and the SWA group is padded.
    specs = {f"l{i}": (full() if i <= 6 else swa()) for i in range(1, 12)}
    cfg = config(specs, 6 * 32 * M)
    assert names(cfg) == [[f"l{i}" for i in range(1, 7)], [f"l{i}" for i in range(7, 12)]]
    assert cfg.num_blocks == 32 and len(cfg.kv_cache_tensors) == 6


def test_gemma3_style_thirty_swa_six_full_is_six_groups() -> None:
    specs = {}
    for i in range(36):
        specs[f"l{i}"] = full() if (i + 1) % 6 == 0 else swa(window=1024)
    groups = get_kv_cache_groups(specs)
    assert len(groups) == 6 and all(len(g.layer_names) == 6 for g in groups)
    sw = [f"l{i}" for i in range(36) if (i + 1) % 6]
    assert [list(g.layer_names) for g in groups[:5]] == [sw[i::5] for i in range(5)]
    assert list(groups[5].layer_names) == [f"l{i}" for i in range(5, 36, 6)]


def test_uniform_type_different_head_sizes() -> None:
    cfg = config({"l1": full(128), "l2": full(64)}, 3 * 32 * M)
    assert len(cfg.kv_cache_groups) == 1
    assert isinstance(cfg.kv_cache_groups[0].kv_cache_spec, UniformTypeKVCacheSpecs)
    assert cfg.num_blocks == 32
    assert [t.size for t in cfg.kv_cache_tensors] == [2 * M * 32, M * 32]


def test_page_size_unification_raises_the_block_size() -> None:
    cfg = config({"l1": full(64), "l2": swa(32)}, 32 * M)
    assert [g.kv_cache_spec.block_size for g in cfg.kv_cache_groups] == [16, 32]
    assert cfg.num_blocks == 32


def test_pages_that_do_not_divide_are_padded_as_vllm_0_33_pads_them() -> None:
    groups = get_kv_cache_groups({"l1": full(64), "l2": swa(96)})
    assert groups[0].kv_cache_spec.page_size_bytes == M * 96 // 64
    assert groups[0].kv_cache_spec.page_size_padded == M * 96 // 64
    # vLLM 0.13's rule, kvcli's --no-pad-pages: refused, saying by how much
    with pytest.raises(PageSizeError, match=(
            r"^layer l1: page size 16384 bytes does not divide the largest page size 24576 "
            r"bytes \(ratio 1.5\), so its block size cannot be raised to match \(--no-pad-pages: "
            r"vLLM 0.13's rule; vLLM 0.33 pads the page to 24576 bytes, wasting 8192 bytes "
            r"a block\)$")):
        get_kv_cache_groups({"l1": full(64), "l2": swa(96)}, pad_pages=False)
    # `kvcli config --no-pad-pages` says it changed nothing where it sized; --pad-pages, the
    # default restated, says nothing
    from types import SimpleNamespace

    from kvcli.config_warnings import config_warnings
    from kvcore.models import load_preset

    def said(given: str) -> list[str]:
        gs = get_kv_cache_groups({"l1": full(64), "l2": swa(128)}, pad_pages=False)
        result = SimpleNamespace(geometry=load_preset("gemma-3-27b"), weights_estimated=False,
                                 config=SimpleNamespace(kv_cache_groups=gs), draft_limit=None,
                                 planning_warnings=())
        return config_warnings(result, {given}, gpu_memory_gib=None, max_model_len=None,
                               block_size=16, block_size_given=True, enable_prefix_caching=True,
                               offloading=False)

    assert said("pad_pages") == []
    assert said("no_pad_pages") == [
        ("option --no-pad-pages: no effect on gemma-3-27b (no attention page needs padding: "
         "the pages divide one another)")]


def test_num_blocks_override() -> None:
    cfg = config({"l1": full(), "l2": full()}, 2 * 32 * M, override=16)
    assert cfg.num_blocks == 16


def test_attention_free_model() -> None:
    cfg = kv_cache_config_from_groups(get_kv_cache_groups({}), 10**9)
    assert (cfg.num_blocks, cfg.kv_cache_tensors, cfg.kv_cache_groups) == (1, (), ())


# Qwen1.5-7B geometry: 32 layers, 32 KV heads, head 128, float16, block 16.
def qwen(kind):
    if kind == "full":
        return FullAttentionSpec(16, 32, 128, "float16")
    return SlidingWindowSpec(16, 32, 128, "float16", sliding_window=1024)


def test_max_concurrency_qwen15() -> None:
    ctx = SizingContext(max_model_len=16384, max_num_batched_tokens=1024,
                        max_concurrent_batches=1)
    g_full = get_kv_cache_groups({f"l{i}": qwen("full") for i in range(32)})
    assert max_concurrency(g_full, 1536, ctx) == 1.5  # 1536 / 1024 blocks a request
    g_swa = get_kv_cache_groups({f"l{i}": qwen("swa") for i in range(32)})
    assert max_concurrency(g_swa, 387, ctx) == 3  # 387 / (cdiv(1023 + 1024, 16) + 1 = 129)
    hybrid = {f"f{i}": qwen("full") for i in range(32)}
    hybrid.update({f"s{i}": qwen("swa") for i in range(32)})
    g_h = get_kv_cache_groups(hybrid)
    assert len(g_h) == 2
    assert max_concurrency(g_h, 3459, ctx) == 3  # 3459 / (1024 + 129)
    assert kv_cache_tokens(g_h, 3459, ctx) == 3 * 16384


def test_estimate_max_model_len_qwen15() -> None:
    specs = {f"l{i}": qwen("full") for i in range(32)}
    eight_gib = 8 << 30  # 32 layers * 2 * 32 * 128 * 2 B = 0.5 MiB a token -> 16384 tokens
    assert estimate_max_model_len(specs, SizingContext(16385), eight_gib) == 16384
    assert estimate_max_model_len(specs, SizingContext(16383), eight_gib) == 16383
    assert estimate_max_model_len(specs, SizingContext(100), 1000) == 0


def test_memory_check_holds_back_the_null_block() -> None:
    # vLLM 0.33 plans against available - one block: 8 GiB - 8 MiB leaves 16368 tokens.
    groups = get_kv_cache_groups({f"l{i}": qwen("full") for i in range(32)})
    with pytest.raises(NotEnoughMemory) as err:
        check_enough_memory(groups, SizingContext(16384), 8 << 30)
    assert err.value.fits == 16368
    assert err.value.needed == 8 << 30 and err.value.available == (8 << 30) - (8 << 20)
    assert "needs 8.00 GiB" in str(err.value) and "16368" in str(err.value)
    check_enough_memory(groups, SizingContext(16368), 8 << 30)  # no error


def test_resolve_from_explicit_geometry() -> None:
    r = resolve_kv_cache_config(layers=32, kv_heads=32, head_dim=128, dtype="fp16",
                                num_blocks=1536, max_model_len=16384, max_num_batched_tokens=1024,
                                max_concurrent_batches=1)
    assert r.config.num_blocks == 1536 and r.capacity.max_concurrency == 1.5
    assert r.bytes_per_block == 32 * 2 * 16 * 32 * 128 * 2
    r2 = resolve_kv_cache_config(layers=64, kv_heads=32, head_dim=128, dtype="half",
                                 sliding_window=1024, sliding_layers="32-63", num_blocks=3459,
                                 max_model_len=16384, max_num_batched_tokens=1024,
                                 max_concurrent_batches=1)
    assert [g.kv_cache_spec.kind for g in r2.config.kv_cache_groups] == ["full",
                                                                        "sliding_window"]
    assert r2.capacity.max_concurrency == 3
    with pytest.raises(InputError, match="kv_heads"):
        resolve_kv_cache_config(layers=4, head_dim=64, num_blocks=10)
    with pytest.raises(InputError, match="pattern"):
        resolve_kv_cache_config(layers=4, kv_heads=1, head_dim=64, sliding_window=8,
                                sliding_layers="9", num_blocks=10)
