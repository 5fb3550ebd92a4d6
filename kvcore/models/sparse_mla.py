"""Sparse MLA (DeepSeek-V3.2, GLM-5): the latent cache plus the lightning indexer's cache.

What vLLM 0.33 does (model_executor/models/deepseek_v2.py `Indexer`,
`DeepseekV32IndexerCache`; v1/attention/backends/mla/flashattn_mla_sparse.py,
flashmla_sparse.py, indexer.py; platforms/cuda.py and interface.py; v1/core/kv_cache_planning.py),
recorded from vLLM on the meta device in tests/data/sparse_mla/:

* a config is sparse when vLLM serves it with MLA and it has ``index_topk`` (model_type
  deepseek_v32, glm_moe_dsa, or deepseek_v3 with the key; deepseek_v32 reads DeepseekV3Config);
* each decoder layer then registers TWO caches, both `MLAAttentionSpec`s of one head and
  ``max_tp_shards`` 1: the indexer's keys (``layers.N.self_attn.indexer.k_cache``, first)
  ``index_head_dim`` fp8 bytes plus a float32 scale per 128 of them (128 + 4 = 132 bytes a
  token, dtype uint8, cache role ``indexer``) and the latent one as in dense MLA (576 values);
* on an H100/H200 with a bf16 cache CudaPlatform's first sparse backend is
  FLASH_ATTN_MLA_SPARSE (kernel block sizes MultipleOf(64)); the indexer's backend takes [64]:
  `update_block_size_for_backend` gives both 64 when --block-size is not given (an explicit
  size no sparse backend takes leaves vLLM without a backend);
* both specs need the same token slots, so vLLM's planner puts all the layers in ONE group
  (`UniformTypeKVCacheSpecs`): a block of 64 tokens costs 73,728 + 8,448 = 82,176 bytes a
  layer in bf16.

Not modelled: an fp8 cache (FLASHMLA_SPARSE's 656-byte ``fp8_ds_mla`` rows) and Blackwell's
backends, refused (a sparse model with a quantised cache); IndexCache (``index_topk_freq``,
``index_topk_pattern``: layers without an indexer), refused by `kvcore.models.mla`.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvcore.errors import InputError
from kvcore.specs import KVCacheSpec, MLAAttentionSpec

# The block size every sparse backend and the indexer's take on Hopper (MultipleOf(64), [64]).
SPARSE_BLOCK = 64
# vLLM's indexer quantises its keys to fp8 with a float32 scale per this many values.
_QUANT_BLOCK = 128
# vLLM's default --block-size, which it raises for the sparse backends.
_DEFAULT_BLOCK = 16


@dataclass(frozen=True, slots=True)
class IndexerGeometry:
    """DeepSeek-V3.2's lightning indexer: its heads, their width, the tokens it keeps."""
    n_heads: int
    head_dim: int
    topk: int

    @property
    def cache_bytes_per_token(self) -> int:
        """`DeepseekV32IndexerCache`'s head size: fp8 keys and a float32 scale a block."""
        return self.head_dim + self.head_dim // _QUANT_BLOCK * 4

    @property
    def norm_params(self) -> int:
        """k_norm: a LayerNorm's weight and bias, float32 whatever the model dtype."""
        return 2 * self.head_dim

    def params(self, hidden: int, q_lora_rank: int) -> int:
        """Its weights in one layer, all replicated over tensor parallelism: wq_b (from the
        query bottleneck), wk and weights_proj (fused, from the hidden state), k_norm."""
        return (q_lora_rank * self.n_heads * self.head_dim
                + hidden * (self.head_dim + self.n_heads) + self.norm_params)


def sparse_block_size(block_size: int) -> int:
    """The block size vLLM runs a sparse model at: 64 for its default 16, the size given when
    the sparse backends take it, refused otherwise."""
    if block_size == _DEFAULT_BLOCK:
        return SPARSE_BLOCK
    if block_size % SPARSE_BLOCK:
        raise InputError(f"block_size {block_size}: vLLM 0.33's sparse MLA backends (DeepSeek-"
                         f"V3.2's indexer) take a multiple of {SPARSE_BLOCK} only",
                         field="block_size")
    return block_size


def sparse_layer_specs(name: str, indexer: IndexerGeometry, latent: int, block_size: int,
                       kv_dtype: str, kv_cache_dtype: str) -> dict[str, KVCacheSpec]:
    """One sparse layer's two caches, the indexer's first (vLLM registers it first)."""
    if kv_cache_dtype not in ("auto", "bfloat16"):
        raise InputError(f"kv_cache_dtype {kv_cache_dtype!r}: a sparse MLA model (DeepSeek-V3.2"
                         "'s indexer) with a quantised cache (FLASHMLA_SPARSE's fp8_ds_mla) is "
                         "not modelled; use auto", field="kv_cache_dtype")
    bs = sparse_block_size(block_size)
    return {f"{name}.indexer": MLAAttentionSpec(bs, 1, indexer.cache_bytes_per_token, "uint8"),
            name: MLAAttentionSpec(bs, 1, latent, kv_dtype, cache_dtype_str=kv_cache_dtype)}
