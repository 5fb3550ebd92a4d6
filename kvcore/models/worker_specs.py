"""The per-layer KV cache specs one tensor-parallel worker builds from a `ModelGeometry`
(`kvcore.models.geometry`): layer name -> spec, in model order, as vLLM's layers declare them.

Per layer kind:
* ``full``: ``FullAttentionSpec``; ``sliding``: ``SlidingWindowSpec(sliding_window)``;
  ``chunked``: ``ChunkedLocalAttentionSpec(attention_chunk_size)``. K and V of
  ``num_kv_heads // tp`` heads (at least 1: vLLM replicates KV heads when tp > heads) of
  ``head_dim`` in the KV cache dtype. Per-head parameters such as gpt-oss's attention sinks are
  weights, not KV: they cost nothing here.
* ``mamba``: ``MambaSpec`` with vLLM's state shapes (conv state and SSM state, see
  `kvcore.models.mamba_spec`, with speculative decoding's blocks and conv rows), in the
  model dtype. As vLLM's platform code does for hybrid models, the
  attention block size is raised until an attention page holds a Mamba state (in steps of the
  attention kernel's block alignment, 16 for FlashAttention), and the Mamba page is padded to the
  attention page, where the worker holds an attention layer (`mamba_spec.holds_attention`).
  A Mamba2 layer (vLLM's ``MambaMixer2``) declares one prefill checkpoint block
  (alignment 1), Jamba's Mamba1 none: in ``align`` mode that is a third block per request, and
  the scheduler does not split a prefill's last chunk at its last block boundary.
  Checked against vLLM's own start-up (tests/data/mamba/start_defaults.json). Zamba2:
  `kvcore.models.zamba2`.
* ``mla``: multi-head latent attention (DeepSeek-V2/V3, Kimi-K2): ``MLAAttentionSpec``, one
  latent vector of ``kv_lora_rank + qk_rope_head_dim`` values a token in the KV cache dtype, no
  separate K and V, and one "head" on every tensor-parallel rank (vLLM's ``get_num_kv_heads``
  is 1 under MLA: the latent is replicated, not split): tests/data/mla/answers.json. Sparse
  MLA (DeepSeek-V3.2, GLM-5) adds an indexer cache a layer, at block 64: `models/sparse_mla.py`.
* ``dsv4``: DeepSeek-V4's sliding-window, compressed, indexer and compressor-state caches
  (`models/deepseek_v4_specs.py`).
"""

from __future__ import annotations

from kvcore.models.deepseek_v4_specs import v4_layer_specs
from kvcore.models.dory import dory_loop_specs
from kvcore.models.geometry import ModelGeometry
from kvcore.models.iquest_loop import registration_order
from kvcore.models.mamba_spec import model_mamba_spec
from kvcore.models.pangu_sinks import refuse_sink_block
from kvcore.models.sparse_mla import refuse_ds_mla, sparse_layer_specs
from kvcore.specs import (
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    KVCacheSpec,
    MLAAttentionSpec,
    RSWASpec,
    SlidingWindowSpec,
)

# vLLM's CacheConfig.DEFAULT_BLOCK_SIZE: --block-size when it is not given
DEFAULT_BLOCK_SIZE = 16


def kv_heads_per_worker(num_kv_heads: int, tp: int) -> int:
    """vLLM splits KV heads over tensor-parallel ranks and replicates them when tp exceeds them."""
    return max(1, num_kv_heads // tp)


def decoder_layer_of(name: str, num_layers: int) -> int:
    """The decoder layer a `layer_specs` name (``layers.I``, or ``layers.I.indexer``: sparse
    MLA's indexer cache beside its layer) belongs to: a Falcon-H1 Mamba mixer is named
    ``layers.(num_layers + i)`` beside layer i's attention (below)."""
    # (the index after "layers.": DeepSeek-V3.2's 'layers.3.indexer' was int('indexer'), a
    # traceback on pipeline stages)
    i = int(name.split(".")[1])
    return i - num_layers if i >= num_layers else i


def layer_specs(g: ModelGeometry, *, block_size: int | None = None, kv_cache_dtype: str = "auto",
                tp: int = 1, max_model_len: int | None = None,
                mamba_cache_mode: str = "align",
                gdn_prefill_checkpoint: bool = True,
                prefix_match_unit: int | None = None,
                num_speculative_tokens: int = 0,
                attention_free: bool | None = None) -> dict[str, KVCacheSpec]:
    """Layer name -> spec for one tensor-parallel worker, in model order.
    ``gdn_prefill_checkpoint``: Gated DeltaNet layers on FlashInfer's kernel (Hopper, what
    kvcli assumes) checkpoint inside a prefill; False: the Triton kernel's layout.
    ``prefix_match_unit`` (vLLM's): moves a Gated DeltaNet layer's checkpoint grid.
    ``num_speculative_tokens``: speculative decoding's K (any method), which the Mamba
    layers' spec keeps blocks and conv rows for (`kvcore.models.mamba_spec`).
    ``block_size``: --block-size, None when not given (vLLM's default 16, which it raises for
    a sparse MLA model's backends where an explicit size stays or fails).
    ``attention_free``: the Mamba layers' spec as a worker holding no attention layer builds
    it (`kvcore.sizing.stage_specs`); False: one holding attention (a draft's layers beside
    them); None: as the model's own layers say (`kvcore.models.mamba_spec.holds_attention`)."""
    if g.v4 is not None:    # (DeepSeek-V4's own caches: `kvcore.models.deepseek_v4_specs`)
        return v4_layer_specs(g, block_size=block_size, kv_cache_dtype=kv_cache_dtype)
    given_block, block_size = block_size, DEFAULT_BLOCK_SIZE if block_size is None else block_size
    refuse_ds_mla(g, kv_cache_dtype)
    if g.pangu_sinks is not None:   # (its sinks written into whole blocks)
        refuse_sink_block(g.pangu_sinks, block_size)
    kv_dtype = g.dtype if kv_cache_dtype == "auto" else kv_cache_dtype
    heads = kv_heads_per_worker(g.num_kv_heads, tp)
    mamba = None
    # (vLLM raises the attention block by the class, hybrid whatever layers a config keeps:
    # a Qwen3.5 cut to attention layers alone still pages for its Gated DeltaNet state,
    # platforms/interface.py's _align_hybrid_block_size; found by tests/data/size_fuzz)
    if g.mamba is not None:
        mamba, block_size = model_mamba_spec(
            g, block_size=block_size, kv_heads=heads, kv_dtype=kv_dtype, tp=tp,
            max_model_len=max_model_len, mamba_cache_mode=mamba_cache_mode,
            gdn_prefill_checkpoint=gdn_prefill_checkpoint, prefix_match_unit=prefix_match_unit,
            num_speculative_tokens=num_speculative_tokens, attention_free=attention_free)
    out: dict[str, KVCacheSpec] = {}
    if g.zamba is not None and mamba is not None:
        # Zamba2: a cache each use of a shared block, all before the mixers (vLLM's
        # registration order; it names mixer i "{uses + i}.mixer")
        out = dict.fromkeys(g.zamba.attention_names(),
                            FullAttentionSpec(block_size, heads, g.head_dim, kv_dtype))
        return out | {f"mixer.{g.zamba.uses + i}": mamba for i in range(g.num_layers)}
    for i, kind in enumerate(g.layer_kinds):
        name = f"layers.{i}"
        if kind == "mlp" or (g.kv_shared and g.kv_shared[i]):
            continue        # (a KV-shared layer: its target's cache, no spec of its own)
        if g.layer_dims:
            heads = kv_heads_per_worker(g.layer_dims[i][0], tp)
        dim = g.layer_dims[i][1] if g.layer_dims else g.head_dim
        # (V narrower than K: MiMo-V2's; None where they match, as vLLM's spec compares them)
        v = g.layer_v_dims[i] if g.layer_v_dims and g.layer_v_dims[i] != dim else None
        if kind == "parallel":
            # vLLM's FalconH1ParallelHybrid: the attention layer keeps the layer's index, its
            # Mamba mixer is registered as layer num_layers + i
            if mamba is None:
                raise ValueError(f"{g.name}: layer {i} has a Mamba mixer but the model has no "
                                 "Mamba geometry")
            out[name] = FullAttentionSpec(block_size, heads, g.head_dim, kv_dtype)
            out[f"layers.{g.num_layers + i}"] = mamba
            continue
        if kind == "mamba":
            if mamba is None:
                raise ValueError(f"{g.name}: layer {i} is a Mamba layer but the model has no "
                                 "Mamba geometry")
            out[name] = mamba
        elif kind == "mla":
            if g.mla is None:
                raise ValueError(f"{g.name}: layer {i} is an MLA layer but the model has no "
                                 "MLA geometry")
            # vLLM's MLAAttention.get_kv_cache_spec: one head of the latent size, whatever tp
            out.update(sparse_layer_specs(name, i, g.mla.indexer, g.mla.latent_size,
                                          given_block, kv_dtype, kv_cache_dtype)
                       if g.mla.indexer else
                       {name: MLAAttentionSpec(block_size, 1, g.mla.latent_size, kv_dtype,
                                               cache_dtype_str=kv_cache_dtype)})
        elif kind == "full" and g.rswa_window:     # (Unlimited-OCR's RSWAAttention)
            out[name] = RSWASpec(block_size, heads, dim, kv_dtype, head_size_v=v,
                                 rswa_window=g.rswa_window)
        elif kind == "full":
            out[name] = FullAttentionSpec(block_size, heads, dim, kv_dtype, head_size_v=v)
        elif kind == "sliding":
            assert g.sliding_window is not None     # (the geometry's check: a window is given)
            out[name] = SlidingWindowSpec(block_size, heads, dim, kv_dtype, head_size_v=v,
                                          sliding_window=g.layer_windows[i] if g.layer_windows
                                          else g.sliding_window)
        elif kind == "chunked":
            assert g.attention_chunk_size is not None
            out[name] = ChunkedLocalAttentionSpec(block_size, heads, dim, kv_dtype,
                                                  attention_chunk_size=g.attention_chunk_size)
        else:
            raise ValueError(f"unknown layer kind {kind!r}")
    # (IQuest Loop's caches in vLLM's registration order, a layer's passes together: its
    # groups take every other layer of a kind from that order)
    if g.dory is not None:  # (Dory's recurrent blocks: an Attention a loop)
        return dory_loop_specs(out, g.dory, g.num_layers)
    return registration_order(out, g.loop_layers) if g.loop_layers else out

