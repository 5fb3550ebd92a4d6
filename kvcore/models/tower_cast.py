"""A tower module vLLM 0.33 builds with the quant_config and then casts to the model dtype with
``nn.Module.to(dtype)``: MiniCPM-V's resampler, built under float16 and moved to the model
dtype (minicpmv.py ``init_resampler``), its ``kv_proj`` with it (`VisionLinear.cast`).

``.to(dtype)`` casts every floating tensor: an fp8 weight and its float32 scales end in the
model dtype; integer weights (AWQ's and GPTQ's packed int32, W8A8's int8) stay, and scales
already in a 2-byte dtype keep their size. Census tests/data/weights_census/quant_towers3/
(MiniCPM-V 2.6 under fp8, compressed-tensors FP8 and ModelOpt FP8: the kv_proj's weight in
bfloat16 beside a bfloat16 scale).
"""

from __future__ import annotations

from kvcore.models.vision_keys import VisionLinear


def cast_paths(linears: tuple[VisionLinear, ...]) -> frozenset[str]:
    """The paths of the tower's linears the class casts to the model dtype."""
    return frozenset(lin.path for lin in linears if lin.cast)


def cast_bytes(held: int, weights: int, float_weights: bool, dtype_bytes: int) -> int:
    """A cast linear's bytes on a rank: `held` its bytes as quantised, `weights` its weights
    (one byte each: fp8 where `float_weights`, else int8), the rest float32 scales."""
    scales = (held - weights) // 4
    return (weights * dtype_bytes if float_weights else weights) + scales * dtype_bytes
