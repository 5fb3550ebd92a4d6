"""The geometry's quantisation fields, read from a config's ``quantization_config`` as vLLM 0.33
reads it: the method, and each method's own reading (AWQ / GPTQ `kvcore.models.int_quant`,
ModelOpt `kvcore.models.modelopt_quant`, compressed-tensors' KV cache scheme
`kvcore.models.kv_cache_quant`; fp8's weight blocks, static input scales and ignored list, the
names as vLLM renames them before it matches them, `kvcore.models.fp8_renames`) and the vision
tower's linears an fp8 checkpoint quantises (`kvcore.models.fp8_vision`), or all of them
under AWQ, GPTQ, compressed-tensors (`kvcore.models.tower_int_quant` applies their lists) and
ModelOpt (`kvcore.models.tower_modelopt`)."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models import fp8_vision, int_quant, kv_cache_quant, modelopt_quant
from kvcore.models.fp8_renames import ignored_as_matched, vllm_name
from kvcore.models.fp8_scales import block_of, ignored_of, static_inputs
from kvcore.models.quantization import quant_method
from kvcore.models.vision_keys import VisionParams


def quant_fields(qc: Any, arch: str, vision: VisionParams, source: str) -> dict[str, Any]:
    """`ModelGeometry`'s quantisation fields for config ``quantization_config`` `qc` of a model
    of architecture `arch` (its first ``architectures`` entry) with tower `vision`."""
    method = quant_method(qc, source)
    fp8 = method == "fp8"
    if fp8:
        _check_fp8(qc, source)
    ignored, key = ignored_of(qc)
    # (Qwen3.5's checkpoints' model.language_model.layers.N are vLLM's model.layers.N)
    matched = ignored_as_matched(ignored, arch)
    iq = int_quant.read(qc, method, source, arch)
    mo = modelopt_quant.read(qc, method, source, arch)
    return {
        "quantization": method,
        "int_quant": iq,
        "modelopt": mo,
        "ct_kv_scheme": kv_cache_quant.read_scheme(qc, method, source),
        "fp8_block": block_of(qc) if fp8 else None,
        "fp8_static": fp8 and static_inputs(qc),
        "fp8_ignored": tuple(m for m, _ in matched), "fp8_ignored_key": key,
        "fp8_ignored_written": tuple(w for _, w in matched),
        "vision_linears": fp8_vision.quantised(
            vision.linears, ignored, tuple(vllm_name(n, arch) for n in ignored), key,
            source) if fp8 else vision.linears if iq or mo else (),
    }


def _check_fp8(qc: dict[str, Any], source: str) -> None:
    """Fp8Config's own refusals of its keys, which kvcli read as their defaults (a list for
    ``activation_scheme``: dynamic; a ``weight_block_size`` of other than two positive integers:
    per-tensor scales)."""
    def refuse(key: str, why: str) -> InputError:
        return InputError(f"{why}, got {clipped(qc.get(key))}: vLLM's Fp8Config refuses it",
                          path=source or None, field=f"quantization_config.{key}")

    scheme, block = qc.get("activation_scheme"), qc.get("weight_block_size")
    if scheme is not None and scheme not in ("static", "dynamic"):
        raise refuse("activation_scheme", 'expected "static" or "dynamic"')
    if block is None:
        return
    if block_of(qc) is None:
        raise refuse("weight_block_size", "expected two integers >= 1")
    if scheme == "static":      # ("The block-wise quantization only supports dynamic ...")
        raise refuse("activation_scheme", "block-wise fp8 takes only a dynamic activation "
                     "scheme")
