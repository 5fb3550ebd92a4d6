"""A config.json's ``quantization_config`` read as vLLM 0.33 reads it
(`ModelArchConfigConvertorBase._normalize_quantization_config`, `ModelConfig._verify_quantization`):
an object whose ``quant_method`` (absent or "": unquantised) is lower-cased, with
``compressed_tensors`` spelt ``compressed-tensors``, and must be one of the methods vLLM knows.
A ``quantization_config`` that is not an object, or a ``quant_method`` that is not a string,
fails vLLM's ``.get`` / ``.lower()``: refused here too, where kvcli sized the weights unquantised
without a word (or raised a TypeError on a list)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvcore.errors import InputError, clipped
from kvcore.models import modelopt_quant
from kvcore.models.kv_cache_quant import layer_kv_dtype
from kvcore.named_choices import named_choices

if TYPE_CHECKING:
    from kvcore.models.geometry import ModelGeometry

# vLLM 0.33's QUANTIZATION_METHODS (model_executor/layers/quantization/__init__.py)
QUANTIZATION_METHODS = (
    "awq", "auto_awq", "fp8", "fbgemm_fp8", "fp_quant", "modelopt", "modelopt_fp4",
    "modelopt_mxfp8", "modelopt_mixed", "auto_gptq", "gptq", "gptq_marlin", "awq_marlin",
    "humming", "compressed-tensors", "experts_int8", "quark", "moe_wna16", "torchao", "inc",
    "mxfp4", "gpt_oss_mxfp4", "deepseek_v4_fp8", "online", "fp8_per_tensor", "fp8_per_block",
    "fp8_per_channel", "int8_per_channel_weight_only", "nvfp4_per_token", "mxfp8")
# (its DEPRECATED_QUANTIZATION_METHODS: refused unless --allow-deprecated-quantization)
DEPRECATED_METHODS = ("fbgemm_fp8", "fp_quant")


def quant_method(quant: Any, source: str) -> str | None:
    """The checkpoint's quantization method (None: unquantised) of a ``quantization_config``
    value (None: absent or null)."""
    if quant is None:
        return None
    if not isinstance(quant, dict):
        raise InputError(f"must be an object, got {clipped(quant)}", path=source or None,
                         field="quantization_config")
    method = quant.get("quant_method", "")
    if not isinstance(method, str):
        raise InputError(f"must be a string, got {clipped(method)}", path=source or None,
                         field="quantization_config.quant_method")
    # (ModelOpt's: named from hf_quant_config.json's producer, or by its algorithm)
    method = modelopt_quant.normalised(quant, method.lower(), source)
    method = method.replace("compressed_tensors", "compressed-tensors")
    if method and method not in QUANTIZATION_METHODS:
        known = named_choices(method, QUANTIZATION_METHODS, "vLLM 0.33 methods",
                              "vLLM's QUANTIZATION_METHODS (model_executor/layers/quantization)")
        raise InputError(f"unknown quantization method {clipped(method)}; {known}",
                         path=source or None, field="quantization_config.quant_method")
    if method in DEPRECATED_METHODS:
        # (ModelConfig._verify_quantization; kvcli has no --allow-deprecated-quantization)
        raise InputError(f"is {method}, and vLLM 0.33 refuses it: \"The quantization method "
                         f"{method} is deprecated and will be removed in future versions of vLLM."
                         " To bypass, set `--allow-deprecated-quantization`.\"",
                         path=source or None, field="quantization_config.quant_method")
    return method or None


def check_build(g: ModelGeometry, tp: int, dtype_given: bool) -> None:
    """vLLM's refusals, once the model dtype and the TP size are known, of a quantised
    checkpoint it would not build: AWQ's and compressed-tensors' shards that are not whole
    groups (`kvcore.models.int_quant_refusal`), a ModelOpt config's dtype (naming ``dtype`` when
    `dtype_given`) and its shards (`kvcore.models.modelopt_rank`)."""
    # (imported here: both read the geometry, whose module imports this one's readers)
    from kvcore.models import int_quant_refusal, modelopt_rank, tower_int_quant, tower_modelopt

    int_quant_refusal.check_tp(g, tp)
    modelopt_rank.check_dtype(g, dtype_given)
    # (the tower first, as vLLM builds it, but MiniCPM-V's: `tower_int_quant.LLM_FIRST`)
    first = g.architecture not in tower_int_quant.LLM_FIRST
    if first:
        tower_modelopt.check_tp(g, tp)
    modelopt_rank.check_tp(g, tp)
    if not first:
        tower_modelopt.check_tp(g, tp)


def auto_kv_dtype(g: ModelGeometry, kv_cache_dtype: str) -> str:
    """``kv_cache_dtype`` as vLLM resolves ``auto`` for the checkpoint (arg_utils.py,
    resolve_kv_cache_dtype_string): a ModelOpt config's KV cache algorithm, fp8_e4m3; nvfp4,
    which kvcli does not model, refused naming the option. Then as its attention layers take
    it (`kvcore.models.kv_cache_quant`): a compressed-tensors kv_cache_scheme's ``auto`` fp8,
    the schemes and the fp8_e5m2 cache vLLM refuses refused."""
    kv = g.modelopt.kv_cache if g.modelopt is not None else None
    if kv_cache_dtype != "auto" or kv is None:
        return layer_kv_dtype(g, kv_cache_dtype)
    if kv == "nvfp4":
        raise InputError(f"is auto, which vLLM 0.33 resolves to {g.name}'s KV cache algorithm, "
                         "nvfp4: kvcli does not model an nvfp4 KV cache; give another",
                         field="kv_cache_dtype")
    return kv
