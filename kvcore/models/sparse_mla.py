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
* on an H100/H200 CudaPlatform's sparse backends, in its order, are FLASH_ATTN_MLA_SPARSE (a
  bf16 / fp16 cache), FLASHMLA_SPARSE (``fp8``, which it serves as ``fp8_ds_mla``: 656 bytes a
  token, 512 fp8 latent values, 4 float32 scales and 64 bf16 RoPE values), then
  FLASHINFER_MLA_SPARSE_SM90 (``fp8_e4m3``: plain fp8, 576 bytes; its FlashInfer feature check
  passes with the FlashInfer vLLM 0.33 pins); none takes ``fp8_e5m2``, and vLLM finds no
  backend. All take block sizes MultipleOf(64), the indexer's backend [64];
  `update_block_size_for_backend` gives both 64 when --block-size is not given, and an
  explicit size none takes (16, 32, ...) leaves vLLM without a backend;
* both specs need the same token slots, so vLLM's planner puts all the layers in ONE group
  (`UniformTypeKVCacheSpecs`): a block of 64 tokens costs 73,728 + 8,448 = 82,176 bytes a
  layer in bf16, 41,984 + 8,448 = 50,432 in fp8_ds_mla;
* IndexCache (``index_topk_freq`` with ``index_skip_topk_offset``, or ``index_topk_pattern``):
  a layer that reuses an earlier layer's top-k builds no indexer, so keeps no indexer cache
  (`IndexerGeometry.in_layer`).

Recorded: tests/data/sparse_mla/answers.json (bf16) and variants.json (the quantised caches,
IndexCache, each backend's checks). ``fp8_ds_mla`` named as --kv-cache-dtype is ``fp8`` on a
sparse model (FLASHMLA_SPARSE lists both) and on any other no backend an H100 has lists it
(tests/data/sparse_mla/ds_mla_dense.json): `refuse_ds_mla`. Not modelled: Blackwell's backends;
``nvfp4_ds_mla`` (kvcli's value table refuses it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from kvcore.errors import InputError
from kvcore.models.laguna import LAGUNA
from kvcore.specs import KVCacheSpec, MLAAttentionSpec

if TYPE_CHECKING:
    from kvcore.models.geometry import ModelGeometry

# The block size every sparse backend and the indexer's take on Hopper (MultipleOf(64), [64]).
SPARSE_BLOCK = 64
# vLLM's indexer quantises its keys to fp8 with a float32 scale per this many values.
_QUANT_BLOCK = 128
# The cache dtype the backend an H100 picks runs a --kv-cache-dtype as (the latent's
# cache_dtype_str): fp8 is FLASHMLA_SPARSE's fp8_ds_mla, fp8_e4m3 FLASHINFER_MLA_SPARSE_SM90's
# (fp8_ds_mla named: FLASHMLA_SPARSE lists it beside fp8, the same layout)
_HOPPER_CACHE = {"auto": "auto", "bfloat16": "bfloat16", "fp8": "fp8_ds_mla",
                 "fp8_ds_mla": "fp8_ds_mla", "fp8_e4m3": "fp8_e4m3"}
# DeepSeek's packed fp8 MLA layout, which only the sparse backends list
DS_MLA = "fp8_ds_mla"


@dataclass(frozen=True, slots=True)
class IndexerGeometry:
    """DeepSeek-V3.2's lightning indexer: its heads, their width, the tokens it keeps."""
    n_heads: int
    head_dim: int
    topk: int
    # IndexCache: a layer's top-k computed every `freq` layers from `skip_offset` on, or
    # `pattern`'s "S" layers skipping (vLLM's defaults: 1, 2, none: every layer has one)
    freq: int = 1
    skip_offset: int = 2
    pattern: str | tuple[object, ...] | None = None

    def in_layer(self, layer: int) -> bool:
        """Whether decoder layer `layer` builds an indexer (and its cache): vLLM's
        DeepseekV2MLAAttention / DeepseekV32Attention skip_topk rule, negated."""
        if self.pattern is not None:
            return not (layer < len(self.pattern) and self.pattern[layer] == "S")
        return max(layer - self.skip_offset + 1, 0) % self.freq == 0

    @property
    def index_cache(self) -> bool:
        """Whether some layers reuse another's top-k (IndexCache)."""
        return self.freq != 1 or self.pattern is not None

    def every_layer(self) -> IndexerGeometry:
        """The indexer of a layer that always builds one (an MTP module's, vLLM's
        is_mtp_layer)."""
        return replace(self, freq=1, pattern=None)

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


def sparse_block_size(block_size: int | None) -> int:
    """The block size vLLM runs a sparse model at: 64 when --block-size is not given (None),
    the size given when the sparse backends take it, refused otherwise."""
    if block_size is None:
        return SPARSE_BLOCK
    if block_size % SPARSE_BLOCK:
        raise InputError(f"{block_size}: vLLM 0.33 finds no attention backend for a sparse MLA "
                         f"model (DeepSeek-V3.2's indexer) at this block size; its sparse "
                         f"backends take a multiple of {SPARSE_BLOCK} (leave the block size "
                         f"unset for {SPARSE_BLOCK})", field="block_size")
    return block_size


def sparse_cache_dtype(kv_cache_dtype: str) -> str:
    """The latent cache's dtype string on the backend an H100 picks for ``kv_cache_dtype``."""
    cache = _HOPPER_CACHE.get(kv_cache_dtype)
    if kv_cache_dtype == "float16":
        # (FLASH_ATTN_MLA_SPARSE takes it, but vLLM's config refuses it beside the models'
        # bfloat16: tests/data/sparse_mla/README.md)
        raise InputError("'float16': not modelled for a sparse MLA model (vLLM 0.33 refuses it "
                         "beside a bfloat16 model: 'kv_cache_dtype=\"float16\" is incompatible "
                         "with dtype=\"bfloat16\"'); use auto", field="kv_cache_dtype")
    if cache is None:
        raise InputError(f"{kv_cache_dtype!r}: vLLM 0.33 finds no attention backend for a "
                         "sparse MLA model (DeepSeek-V3.2's indexer) with this KV cache on "
                         "Hopper; its sparse backends take auto, bfloat16, fp8 (as fp8_ds_mla), "
                         "fp8_ds_mla and fp8_e4m3", field="kv_cache_dtype")
    return cache


def refuse_ds_mla(g: ModelGeometry, kv_cache_dtype: str) -> None:
    """vLLM's "No valid attention backend found" for fp8_ds_mla on a model that is not sparse
    MLA: of an H100's dense backends (FlashAttention, FlashInfer, Triton, FlashMLA, ...) none
    lists the dtype."""
    if kv_cache_dtype == DS_MLA and (g.mla is None or g.mla.indexer is None):
        kind = "MLA" if g.mla is not None else "attention"
        raise InputError(f"'{DS_MLA}' with {g.name}: vLLM 0.33 finds no {kind} backend for it "
                         "on Hopper; fp8_ds_mla is the sparse MLA backends' layout "
                         "(DeepSeek-V3.2, GLM-5); use fp8", field="kv_cache_dtype")


def sparse_layer_specs(name: str, layer: int, indexer: IndexerGeometry, latent: int,
                       block_size: int | None, kv_dtype: str,
                       kv_cache_dtype: str) -> dict[str, KVCacheSpec]:
    """Decoder layer `layer`'s caches: the indexer's first (vLLM registers it first) where the
    layer has one, then the latent one."""
    cache = sparse_cache_dtype(kv_cache_dtype)
    bs = sparse_block_size(block_size)
    kv_dtype = "fp8" if kv_dtype == DS_MLA else kv_dtype     # (its elements: fp8 and scales)
    out: dict[str, KVCacheSpec] = {}
    own = indexer.in_layer(layer)
    if own:
        out[f"{name}.indexer"] = MLAAttentionSpec(bs, 1, indexer.cache_bytes_per_token, "uint8")
    out[name] = MLAAttentionSpec(bs, 1, latent, kv_dtype, cache_dtype_str=cache,
                                 index_group_leader=own)
    return out


def layer_geometry(g: ModelGeometry, layer: int) -> ModelGeometry:
    """`g` as decoder layer `layer` is built: without the indexer (no weights, no cache) where
    IndexCache skips it; with the layer's own query heads (Step-3.5's sliding layers), KV heads
    and MLP width (Nemotron-NAS's block_configs); the weights' per-layer loops count each layer
    through it."""
    if g.nas is not None:   # (a no-op attention keeps the model's heads: it builds none)
        return replace(g, num_kv_heads=g.nas.kv_heads[layer] or g.num_kv_heads,
                       intermediate_size=g.nas.ffn_widths[layer])
    if g.sink_layers and g.model_type == LAGUNA:   # (its sliding layers' sinks, if enabled)
        g = replace(g, attention_sinks=g.sink_layers[layer])
    if g.layer_heads and g.layer_heads[layer] != g.num_attention_heads:
        return replace(g, num_attention_heads=g.layer_heads[layer])
    ix = g.mla.indexer if g.mla is not None else None
    if g.mla is None or ix is None or ix.in_layer(layer):
        return g
    return replace(g, mla=replace(g.mla, indexer=None))


def stored_kv_dtype(g: ModelGeometry, kv_cache_dtype: str) -> str:
    """The KV cache dtype vLLM stores for ``kv_cache_dtype`` (resolved): the model's for auto;
    on a sparse model the latent's layout (``fp8`` is stored as fp8_ds_mla)."""
    if g.v4 is not None:    # (DeepSeek-V4 on FlashMLA: `kvcore.models.deepseek_v4_specs`)
        return DS_MLA
    if kv_cache_dtype == "auto":
        return g.dtype
    if g.mla is not None and g.mla.indexer is not None:
        return sparse_cache_dtype(kv_cache_dtype)
    return kv_cache_dtype
