"""DeepSeek-V4's KV cache specs on one worker, as vLLM 0.33 builds them on an H100
(vllm/models/deepseek_v4/attention.py, compressor.py, v1/attention/backends/mla/sparse_swa.py;
recorded in tests/data/deepseek_v4/answers.json).

An H100 takes `DeepseekV4FlashMLAAttention` (nvidia/model.py `_select_dsv4_attn_cls`: every
CUDA GPU but SM12 unless a backend is named), whose cache format is fp8_ds_mla: ``auto`` and
any fp8 --kv-cache-dtype become fp8_ds_mla, any other is refused
(`_resolve_dsv4_kv_cache_dtype`, in its words). Every cache has one head and ``max_tp_shards``
1, so every tensor-parallel rank holds the same specs. Per decoder layer, in vLLM's order:

* C4 layers (ratio 4): the indexer's key cache, an MLA spec of 4 tokens a state at the
  attention's block (256), ``index_head_dim`` fp8 bytes and a float32 scale per 128 of them
  (132 B); its compressor's states, a 2 x 4-token window (overlapping) of float32 kv and score
  states 2 x 2 x ``index_head_dim`` wide, in blocks of 4 tokens;
* every layer: ``swa_cache``, the attention's ``sliding_window`` over 584-byte fp8_ds_mla
  states (448 B NoPE + 128 B RoPE + 8 B of scales, a constant of vLLM's), in blocks of 64;
* compressed layers (ratio 4 or 128): ``attn``, an MLA spec of ``ratio`` tokens a state,
  584 B each, at block 256; its compressor's states (window 8 in blocks of 4 at ratio 4,
  window 128 in blocks of 8 at ratio 128), float32, 2 x ``head_dim`` wide (x 2 at ratio 4).

Every page is rounded up to 576 bytes (fp8_ds_mla's alignment). The 256-token caches carry
vLLM's ``MultipleOf(256)`` block stride alignment (their backends' kernel block).
"""

from __future__ import annotations

from kvcore.errors import InputError
from kvcore.models.deepseek_v4 import INDEXED_RATIO
from kvcore.models.dtypes import check_float_kv_cache
from kvcore.models.geometry import ModelGeometry
from kvcore.specs import KVCacheSpec, MLAAttentionSpec
from kvcore.window_mla_spec import SlidingWindowMLASpec

DS_MLA = "fp8_ds_mla"
# the block the sparse backends take (`update_block_size_for_backend` raises the default to it)
V4_BLOCK = 256
SWA_BLOCK = 64              # (DeepseekV4SWACache's block_size)
STATE_BYTES = 584           # an fp8_ds_mla state: 448 B NoPE + 128 B RoPE + 8 B of scales
PAGE_ALIGNMENT = 576        # fp8_ds_mla's page alignment (512 on FlashInfer's rows)
_QUANT_BLOCK = 128          # the indexer's keys: a float32 scale per this many fp8 values


def v4_cache_dtype(kv_cache_dtype: str, model_dtype: str) -> str:
    """The cache dtype FlashMLA's DeepSeek-V4 layer runs ``--kv-cache-dtype`` as (recorded:
    tests/data/deepseek_v4/kv_cache_dtypes.json)."""
    if kv_cache_dtype == "auto" or kv_cache_dtype.startswith("fp8"):
        return DS_MLA
    check_float_kv_cache(kv_cache_dtype, model_dtype)     # (VllmConfig's, every model's)
    raise InputError(f"vLLM 0.33 refuses it for DeepSeek-V4: \"DeepseekV4 fp8_ds_mla layout "
                     f"only supports fp8 kv-cache, got {kv_cache_dtype}. Please set "
                     "`--kv-cache-dtype fp8` or select a backend that supports bfloat16 KV "
                     "cache.\" (kvcli models the FlashMLA backend an H100 takes)",
                     field="kv_cache_dtype")


def _v4_block(block_size: int | None) -> int:
    if block_size not in (None, V4_BLOCK):
        raise InputError(f"{block_size}: kvcli sizes DeepSeek-V4 at block {V4_BLOCK} only, the "
                         "block vLLM 0.33's sparse DeepSeek-V4 backends take by default (give "
                         "no --block-size)", field="block_size")
    return V4_BLOCK


def _states(block: int, window: int, width: int) -> SlidingWindowMLASpec:
    """A compressor's float32 kv and score states (`CompressorStateCache`)."""
    return SlidingWindowMLASpec(block, 1, width, "float32", sliding_window=window,
                                alignment=PAGE_ALIGNMENT)


def v4_layer_specs(g: ModelGeometry, *, block_size: int | None,
                   kv_cache_dtype: str) -> dict[str, KVCacheSpec]:
    """Layer name -> spec (vLLM's names less "model."), in vLLM's order."""
    assert g.v4 is not None and g.sliding_window is not None
    v4_cache_dtype(kv_cache_dtype, g.dtype)
    block, head = _v4_block(block_size), g.head_dim
    index_key = g.v4.index_head_dim + g.v4.index_head_dim // _QUANT_BLOCK * 4
    out: dict[str, KVCacheSpec] = {}
    for i, ratio in enumerate(g.v4.compress_ratios):
        name = f"layers.{i}.attn"
        overlap = 2 if ratio == INDEXED_RATIO else 1    # (C4's windows overlap: 2 x 4)
        if ratio == INDEXED_RATIO:
            out[f"{name}.indexer.k_cache"] = MLAAttentionSpec(
                block, 1, index_key, "uint8", tokens_per_state=ratio,
                alignment=PAGE_ALIGNMENT, block_stride_alignment=V4_BLOCK)
            out[f"{name}.indexer.compressor.state_cache"] = _states(
                4, overlap * ratio, 2 * overlap * g.v4.index_head_dim)
        out[f"{name}.swa_cache"] = SlidingWindowMLASpec(
            SWA_BLOCK, 1, head, "uint8", sliding_window=g.sliding_window,
            cache_dtype_str=DS_MLA, state_content_bytes=STATE_BYTES, alignment=PAGE_ALIGNMENT,
            model_version="deepseek_v4")
        if ratio > 1:
            out[name] = MLAAttentionSpec(
                block, 1, head, "uint8", cache_dtype_str=DS_MLA, tokens_per_state=ratio,
                state_content_bytes=STATE_BYTES, alignment=PAGE_ALIGNMENT,
                block_stride_alignment=V4_BLOCK, model_version="deepseek_v4")
            out[f"{name}.compressor.state_cache"] = _states(
                4 if ratio == INDEXED_RATIO else 8, overlap * ratio, 2 * overlap * head)
    return out
