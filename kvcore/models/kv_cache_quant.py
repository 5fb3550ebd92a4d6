"""What a quantised checkpoint does to the KV cache dtype in vLLM 0.33's attention layers,
beyond EngineArgs' resolve_kv_cache_dtype_string (`kvcore.models.quantization.auto_kv_dtype`
applies both; tests/data/weights_census/kv_scheme/ recorded them):

- a compressed-tensors ``kv_cache_scheme``: each ``Attention`` given the quant_config turns
  ``auto`` into ``fp8`` (and the CacheConfig's cache_dtype with it: attention.py ~280-291), and
  its CompressedTensorsKVCacheMethod refuses a scheme other than symmetric 8-bit floats per
  tensor or per head (validate_kv_cache_scheme). MLA layers do neither: a pure-MLA model keeps
  the model dtype and its scheme is never checked. Jamba's attention is built without the
  quant_config: it keeps the model dtype too (no kvcli model builds an Attention before MLA
  layers, which would then read the fp8 the Attention wrote);
- ``fp8_e5m2`` refused where an attention layer gets a KV cache method (attention.py ~205-220):
  an fp8 checkpoint's Attention, a ModelOpt one's Attention and MLA (MIXED_PRECISION: with a KV
  cache algorithm, Attention only), a compressed-tensors one's Attention with a scheme.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvcore.errors import InputError, clipped

if TYPE_CHECKING:
    from kvcore.models.geometry import ModelGeometry

# (vLLM 0.33's model classes whose Attention is built without the quant_config, of those kvcli
# sizes: jamba.py's JambaAttentionDecoderLayer, lfm2.py's and lfm2_moe.py's attention,
# step3_text.py's; no q/k/v scales there under any method)
NO_QUANT_ATTENTION = ("jamba", "lfm2", "lfm2_moe", "step3_text")
# compressed-tensors 0.17's QuantizationStrategy, in its order
STRATEGIES = ("tensor", "channel", "group", "block", "token", "tensor_group", "attn_head")
_NON_MLA = ("full", "sliding", "chunked", "parallel")


def read_scheme(quant: Any, method: str | None, source: str) -> str | None:
    """A compressed-tensors config's kv_cache_scheme as vLLM's attention layers take it:
    None (none given), "" (one vLLM accepts) or vLLM's refusal of it, in its words."""
    kv = quant.get("kv_cache_scheme") if isinstance(quant, dict) else None
    if method != "compressed-tensors" or kv is None:
        return None
    if not isinstance(kv, dict):
        raise InputError(f"must be an object, got {clipped(kv)}", path=source or None,
                         field="quantization_config.kv_cache_scheme")
    type_, num_bits, strategy = kv.get("type"), kv.get("num_bits"), kv.get("strategy")
    if type_ != "float" or num_bits != 8:
        return ("Currently supported kv cache quantization is num_bits=8, type=float, however "
                f"received num_bits={num_bits}, type={type_}")
    if strategy not in STRATEGIES:
        return f"{strategy!r} is not a valid QuantizationStrategy"
    if strategy not in ("tensor", "attn_head"):
        return ("Invalid strategy for compressed-tensors KV cache. Expected strategies: "
                "(<QuantizationStrategy.TENSOR: 'tensor'>, <QuantizationStrategy.ATTN_HEAD: "
                f"'attn_head'>), found strategy: QuantizationStrategy.{strategy.upper()}")
    if not kv.get("symmetric"):
        return ("Only support symmetric scaling factor for compressed-tensors KV cache. "
                f"However found symmetric: {kv.get('symmetric')}")
    return ""


def _quant_attention(g: ModelGeometry) -> bool:
    """Whether the model builds an Attention (not MLA) layer given the quant_config."""
    return g.model_type not in NO_QUANT_ATTENTION and any(k in _NON_MLA for k in g.layer_kinds)


def layer_kv_dtype(g: ModelGeometry, kv_cache_dtype: str) -> str:
    """`kv_cache_dtype` (resolved by EngineArgs) as the model's attention layers take it: a
    compressed-tensors kv_cache_scheme's ``auto`` is fp8, its refusal raised; ``fp8_e5m2``
    refused with an fp8 checkpoint."""
    scheme = g.ct_kv_scheme if _quant_attention(g) else None
    if scheme:
        raise InputError(f"vLLM refuses it: \"{scheme}\"", path=g.source or None,
                         field="quantization_config.kv_cache_scheme")
    if kv_cache_dtype == "fp8_e5m2" and _kv_method(g, scheme is not None):
        raise InputError("is fp8_e5m2, and vLLM 0.33 refuses it for this checkpoint: "
                         "\"fp8_e5m2 kv-cache is not supported with fp8 checkpoints.\"",
                         field="kv_cache_dtype")
    return "fp8" if scheme is not None and kv_cache_dtype == "auto" else kv_cache_dtype


def _kv_method(g: ModelGeometry, ct_scheme: bool) -> bool:
    """Whether an attention layer gets a KV cache method (BaseKVCacheMethod) of the config."""
    if g.quantization == "fp8":
        return _quant_attention(g)
    if g.quantization == "modelopt_mixed":
        return _quant_attention(g) and g.modelopt is not None and g.modelopt.kv_cache is not None
    if g.quantization in ("modelopt", "modelopt_fp4", "modelopt_mxfp8"):
        return _quant_attention(g) or g.mla is not None
    return g.quantization == "compressed-tensors" and ct_scheme


def engine_kv_dtype(g: ModelGeometry, kv_cache_dtype: str, resolved: str, world_size: int) -> str:
    """The cache dtype the engine core's CacheConfig holds when its Scheduler is made (what
    perf.py's count reads), `resolved` the layers' (`auto_kv_dtype`): an Attention writes a
    compressed-tensors scheme's fp8 into the worker's CacheConfig, which is the engine core's
    only where the worker runs in its process (one GPU: the uni executor; several: mp's or
    Ray's processes, and the engine core keeps ``auto``)."""
    ct_fp8 = kv_cache_dtype == "auto" and g.ct_kv_scheme is not None and resolved == "fp8"
    return "auto" if ct_fp8 and world_size > 1 else resolved
