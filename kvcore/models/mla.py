"""Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2) as vLLM 0.33 serves it.

What vLLM does (`ModelArchConfigConvertorBase.is_deepseek_mla`, `ModelConfig.use_mla`,
`MLAAttention.get_kv_cache_spec`, `DeepseekV2MLAAttention`):

* a config uses MLA when its ``model_type`` is one of vLLM's MLA types and it has a
  ``kv_lora_rank`` (the transformers config class defaults one for deepseek_v2/v3, so a config
  that omits it still uses MLA; kimi_k2 is read with DeepSeek-V3's class);
* every decoder layer then keeps ONE latent vector a token: ``kv_lora_rank +
  qk_rope_head_dim`` values (512 + 64 = 576 for all three families) in the KV cache dtype, no
  separate K and V, and the same vector on every tensor-parallel rank (``get_num_kv_heads`` is
  1, ``max_tp_shards`` 1): tensor parallelism does not shrink the page;
* the page is ``block_size x 576 x dtype bytes`` (`MLAAttentionSpec`), 1,152 bytes a token in
  bf16 and 576 with an fp8 cache;
* vLLM picks the block size with the attention backend (below), not 16 everywhere.

A config with ``index_topk`` (DeepSeek-V3.2's model_type deepseek_v32, GLM-5's glm_moe_dsa,
or a deepseek_v3 one with the key) is sparse MLA: an indexer cache beside the latent one
(`kvcore.models.sparse_mla`). Not modelled, refused by name: the other model types vLLM
serves with MLA (DeepSeek-V4's compressed caches, ...; Kimi Linear's MLA layers beside KDA
ones: `kvcore.models.kimi_linear`). GLM-4.7-Flash
(glm4_moe_lite) is plain MLA with GLM-4.5's float32 routers; LongCat-Flash (longcat_flash) two
MLA attentions a decoder layer (`kvcore.models.longcat`); Sarvam's (sarvam_mla) MLA layers
beside a MoE of its own (`kvcore.models.sarvam`), though vLLM's is_deepseek_mla does not list
it.
Not read: ``VLLM_MLA_DISABLE`` (kvcli always sizes the MLA cache vLLM uses by default) and the
multi-token-prediction layers (``num_nextn_predict_layers``: only with speculative decoding).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.geometry import MlaGeometry
from kvcore.models.kimi_linear import KIMI_LINEAR, KIMI_LINEAR_DEFAULTS
from kvcore.models.sparse_mla import IndexerGeometry

# The model types kvcli reads as MLA models.
MLA_MODEL_TYPES = ("deepseek_v2", "deepseek_v3", "kimi_k2", "deepseek_v32", "glm_moe_dsa",
                   "glm4_moe_lite", "longcat_flash", "pangu_ultra_moe", KIMI_LINEAR,
                   "sarvam_mla")
# vLLM 0.33's other MLA model types (is_deepseek_mla): kvcli does not model them.
MLA_NOT_MODELLED = (
    "axk1", "deepseek_v41", "dots3_note", "deepseek_mtp",
    "k3_dspark", "glm5_next", "glm5_next_text",
    "glm4_moe_lite_mtp",
    "pangu_ultra_moe_mtp", "bailing_hybrid", "bailing_hybrid_mtp", "bailing_hybrid_v3_mtp",
    "hy_v4", "hy_v4_mtp")

# transformers' DeepseekV2Config / DeepseekV3Config defaults (the oracle's transformers), for
# keys a config omits; vLLM reads kimi_k2 with DeepseekV3Config.
_V3 = {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
       "q_lora_rank": 1536, "max_position_embeddings": 4096, "n_routed_experts": 256,
       "first_k_dense_replace": 3, "n_shared_experts": 1, "moe_intermediate_size": 2048,
       "vocab_size": 129280}
MLA_DEFAULTS: dict[str, dict[str, Any]] = {
    "deepseek_v2": {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
                    "v_head_dim": 128, "q_lora_rank": 1536, "max_position_embeddings": 2048,
                    "n_routed_experts": 64, "first_k_dense_replace": 0, "n_shared_experts": 2,
                    "moe_intermediate_size": 1407, "vocab_size": 102400},
    "deepseek_v3": _V3,
    KIMI_LINEAR: KIMI_LINEAR_DEFAULTS,     # (its MLA layers beside KDA ones: kimi_linear.py)
    "kimi_k2": _V3,
    "deepseek_v32": _V3,    # (vLLM reads it with DeepseekV3Config)
    # transformers' GlmMoeDsaConfig (GLM-5's class)
    "glm_moe_dsa": {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 192,
                    "v_head_dim": 256, "q_lora_rank": 2048, "max_position_embeddings": 202752,
                    "n_routed_experts": 256, "first_k_dense_replace": 3, "n_shared_experts": 1,
                    "moe_intermediate_size": 2048, "vocab_size": 154880, "index_topk": 2048,
                    "index_head_dim": 128, "index_n_heads": 32},
    # transformers' Glm4MoeLiteConfig (GLM-4.7-Flash's class: no first_k_dense_replace, which
    # vLLM's glm4_moe_lite.py reads, so a config must give it)
    "glm4_moe_lite": {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 192,
                      "v_head_dim": 256, "q_lora_rank": 768, "max_position_embeddings": 202752,
                      "n_routed_experts": 64, "n_shared_experts": 1, "moe_intermediate_size": 1536,
                      "vocab_size": 154880, "intermediate_size": 10240, "num_experts_per_tok": 4},
}


def read_mla(c: dict[str, Any], model_type: str, get, get_dim, source: str) -> MlaGeometry | None:
    """The MLA geometry of a config vLLM serves with MLA, None for any other config; an
    InputError for an MLA model kvcli does not model."""
    if model_type in MLA_NOT_MODELLED and c.get("kv_lora_rank") is not None:
        raise InputError(f"model_type {model_type!r}: vLLM 0.33 serves it with a multi-head "
                         "latent attention variant kvcli does not model (it models MLA for "
                         f"{', '.join(MLA_MODEL_TYPES)})", path=source or None,
                         field="model_type")
    if model_type not in MLA_MODEL_TYPES or get("kv_lora_rank") is None:
        return None
    if model_type == "glm4_moe_lite" and c.get("first_k_dense_replace") is None:
        # (its config class has none; vLLM's glm4_moe_lite.py reads it and fails without)
        raise InputError("missing 'first_k_dense_replace', which vLLM 0.33's GLM-4.7-Flash "
                         "model reads", path=source or None, field="first_k_dense_replace")
    if c.get("is_causal", True) is False:
        # vLLM's ModelConfig.use_mla: bidirectional DeepSeek variants take the non-MLA path
        raise InputError("a bidirectional DeepSeek model ('is_causal' false) is served without "
                         "MLA, which kvcli does not model", path=source or None,
                         field="is_causal")
    # an explicit null q_lora_rank (DeepSeek-V2-Lite) means no query compression, unlike a
    # missing key, which takes the config class's default
    q_lora = c["q_lora_rank"] if "q_lora_rank" in c else get("q_lora_rank")
    if q_lora is not None:
        q_lora = get_dim("q_lora_rank")
    # (required: a class without defaults here, openPangu's remote one, read None and failed
    # adding it to the other head dim, a TypeError)
    return MlaGeometry(kv_lora_rank=get_dim("kv_lora_rank"),
                       qk_rope_head_dim=get_dim("qk_rope_head_dim", required=True),
                       qk_nope_head_dim=get_dim("qk_nope_head_dim", required=True),
                       v_head_dim=get_dim("v_head_dim", required=True), q_lora_rank=q_lora,
                       indexer=_indexer(c, get, get_dim, q_lora, source))


def _indexer(c: dict[str, Any], get, get_dim, q_lora: int | None,
             source: str) -> IndexerGeometry | None:
    """DeepSeek-V3.2's indexer where the config has index_topk (vLLM's test: hasattr)."""
    if get("index_topk") is None:
        return None
    if q_lora is None:      # (its wq_b reads the query bottleneck)
        raise InputError("a sparse MLA model ('index_topk') needs a 'q_lora_rank'",
                         path=source or None, field="q_lora_rank")
    return IndexerGeometry(n_heads=get_dim("index_n_heads", required=True),
                           head_dim=get_dim("index_head_dim", required=True),
                           topk=get_dim("index_topk"), **_index_cache(c, get_dim, source))


def _index_cache(c: dict[str, Any], get_dim, source: str) -> dict[str, Any]:
    """IndexCache's keys, as vLLM's DeepseekV32Attention reads them (getattr with defaults 1,
    2, None): a period, an offset (any integer) and a string (or list) of F / S a layer."""
    offset = c.get("index_skip_topk_offset", 2)
    if type(offset) is not int:
        raise InputError(f"expected an integer, got {clipped(offset)}", path=source or None,
                         field="index_skip_topk_offset")
    pattern = c.get("index_topk_pattern")
    if pattern is not None and not isinstance(pattern, (str, list)):
        # (vLLM takes len() and [layer] of it: a string or a list, "S" where a layer skips)
        raise InputError(f"expected a string (or list) of F and S a layer, got "
                         f"{clipped(pattern)}", path=source or None, field="index_topk_pattern")
    return {"freq": get_dim("index_topk_freq", 1), "skip_offset": offset,
            "pattern": tuple(pattern) if isinstance(pattern, list) else pattern}


def mla_attention_params(m: MlaGeometry, hidden: int, heads: int) -> int:
    """Parameters of one MLA attention layer (DeepseekV2MLAAttention's projections and norms):
    queries through the q_lora_rank bottleneck (or straight from the hidden state), the
    latent and rope key from the hidden state, the latent expanded to every head's no-rope key
    and value, the output projection."""
    qk = m.qk_nope_head_dim + m.qk_rope_head_dim
    if m.q_lora_rank is None:
        q = hidden * heads * qk
    else:
        q = hidden * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * heads * qk
    kv = (hidden * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank
          + m.kv_lora_rank * heads * (m.qk_nope_head_dim + m.v_head_dim))
    return q + kv + heads * m.v_head_dim * hidden


def mla_replicated_params(m: MlaGeometry, hidden: int) -> int:
    """The parameters of one MLA layer that vLLM does not split by tensor parallelism: the
    projections from the hidden state to the query bottleneck and to the latent with its rope
    key (DeepseekV2MLAAttention: fused_qkv_a_proj with disable_tp, or kv_a_proj_with_mqa a
    ReplicatedLinear when there is no q_lora_rank)."""
    return hidden * ((m.q_lora_rank or 0) + m.kv_lora_rank + m.qk_rope_head_dim)


def mla_block_size_note(model: str, block_size: int) -> str:
    """The warning for an MLA model sized at a block size the user did not choose."""
    return (f"{model} uses MLA: vLLM 0.33 takes its block size from the attention backend it "
            "picks for the GPU and KV cache dtype (Hopper: 16 with FLASH_ATTN_MLA, 64 with an "
            "fp8 cache, FLASHMLA; Blackwell: 32, FLASHINFER_MLA; others: 16, TRITON_MLA); "
            f"sized at block_size {block_size}: give block_size to match your server (it logs "
            "the backend and the block size at start-up)")


# The GPU presets by the MLA backend vLLM 0.33 puts first for them (platforms/cuda.py's
# priorities, each backend's compute capabilities and cache dtypes): Hopper takes
# FLASH_ATTN_MLA (no fp8 cache: then FLASHMLA), Blackwell FLASHINFER_MLA, Ampere and Ada
# TRITON_MLA. (AMD's ROCm backends are not read: no preset answers there.)
_HOPPER = frozenset({"h100-sxm", "h100-pcie", "h100-nvl", "h200"})
_TRITON = frozenset({"a100-80gb", "l40s", "l4"})


# The longest query each backend runs on its decode path (the absorbed one: a query in latent
# space against the cached latents), its metadata builder's `reorder_batch_threshold`:
# FlashAttention's and FlashMLA's take short prefill chunks there too
# (v1/attention/backends/mla/flashattn_mla.py:129, flashmla.py:112), the others one token.
_DECODE_QUERY_LEN = {"FLASH_ATTN_MLA": 512, "FLASHMLA": 128}


def mla_decode_query_len(gpu: str | None, kv_cache_dtype: str, spec_tokens: int = 0) -> int:
    """The longest query vLLM 0.33's MLA backend on ``gpu`` runs on its decode path: its own
    threshold, raised to a verification's 1 + K tokens with speculative decoding (every
    backend named here takes verifications as decodes: `_init_reorder_batch_threshold`,
    v1/attention/backend.py:658-677)."""
    picked = mla_backend_block_size(gpu, kv_cache_dtype)
    own = _DECODE_QUERY_LEN.get(picked[0], 1) if picked is not None else 1
    return max(own, 1 + spec_tokens)


def mla_backend_block_size(gpu: str | None, kv_cache_dtype: str) -> tuple[str, int] | None:
    """(backend, block size) vLLM 0.33 picks for an MLA model on the preset ``gpu`` (None: a
    GPU whose pick is not known here)."""
    if gpu in _HOPPER:
        return ("FLASHMLA", 64) if kv_cache_dtype.startswith("fp8") else ("FLASH_ATTN_MLA", 16)
    if gpu == "b200":
        return ("FLASHINFER_MLA", 32)
    if gpu in _TRITON:
        return ("TRITON_MLA", 16)
    return None
