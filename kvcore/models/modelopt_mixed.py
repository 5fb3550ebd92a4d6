"""ModelOpt's MIXED_PRECISION checkpoints (``quant_method`` modelopt_mixed): a
``quantized_layers`` table giving each module its own algorithm, read and looked up as vLLM 0.33's
ModelOptMixedPrecisionConfig does (modelopt.py ``_resolve_quant_algo``).

A linear takes the algorithm its path is listed with; a fused one its shards' (one algorithm,
or vLLM refuses); a module a listed key lies under (the routed experts: ``...mlp.experts.0
.gate_proj`` gives ``...mlp.experts`` its algorithm, as do keys beside ``experts`` under the same
parent); the LM head ``lm_head``'s. A module the table does not reach stays unquantised.
Attention layers hold the k/v/q/prob scales only with a KV cache algorithm, and MLA's never
(the config gives its scales method to ``Attention`` alone). Not sized (counted unquantised,
with the warning): block-FP8 experts (FP8_PB_WO / FP8_BLOCK_SCALES, Fp8MoEMethod) and the GGML
block codecs (iq2_xs, iq2_xxs, q8_0).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError
from kvcore.models.fp8_renames import vllm_name

# (the algorithms a table's entry may name that kvcli sizes: modelopt.py LINEAR_ALGOS)
SIZED = ("FP8", "FP8_PER_CHANNEL_PER_TOKEN", "NVFP4", "W4A16_NVFP4", "MXFP8")
_FUSED = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}


def read(inner: dict[str, Any], arch: str, source: str,
         field: str) -> tuple[tuple[tuple[str, str], ...], int] | None:
    """The table as vLLM paths (renamed by the class's mapper) with upper-cased algorithms, and
    the NVFP4 group size (the first NVFP4 entry's, else 16); None where an entry names an
    algorithm kvcli does not size."""
    table = inner.get("quantized_layers") or {}
    if not isinstance(table, dict) or not table:
        raise InputError("vLLM refuses it: \"MIXED_PRECISION quant_algo requires a non-empty "
                         "'quantized_layers' mapping in the quantization config.\"",
                         path=source or None, field=f"{field}.quantized_layers")
    layers = tuple((vllm_name(str(k), arch), str(v.get("quant_algo", "")).upper())
                   for k, v in table.items() if isinstance(v, dict))
    if any(a not in SIZED for _, a in layers):
        return None
    group = inner.get("group_size") or next(
        (v.get("group_size", 16) for v in table.values()
         if isinstance(v, dict) and str(v.get("quant_algo", "")).upper() in ("NVFP4",
                                                                             "W4A16_NVFP4")), 16)
    return layers, int(group)


def _one(algos: set[str], path: str, source: str) -> str | None:
    if len(algos) > 1:
        raise InputError(f"gives the shards of {path} {len(algos)} algorithms, and vLLM refuses "
                         f"to build it: \"Mixed quant_algo within fused layer {path}: "
                         f"{{{', '.join(map(repr, sorted(algos)))}}}. All shards must use the same "
                         "quantization.\"",
                         path=source or None, field="quantization_config.quantized_layers")
    return algos.pop() if algos else None


def algo_at(layers: tuple[tuple[str, str], ...], path: str,
            fused: dict[str, tuple[str, ...]], source: str = "") -> str | None:
    """The algorithm the table gives the module at `path` (None: unquantised)."""
    table = dict(layers)
    candidates = [path, "lm_head"] if path.endswith(".lm_head") else [path]
    for c in candidates:
        if c in table:
            return table[c]
    proj = path.rsplit(".", 1)[-1]
    base = path.rsplit(".", 1)[0]
    if proj in fused and (algo := _one({table[f"{base}.{s}"] for s in fused[proj]
                                        if f"{base}.{s}" in table}, path, source)):
        return algo
    for c in candidates:
        if algo := next((a for k, a in layers if k.startswith(c + ".")), None):
            return algo
    if path.endswith(".experts"):
        parent = path.rsplit(".experts", 1)[0] + "."
        if algo := next((a for k, a in layers if k.startswith(parent)), None):
            return algo
    if proj in _FUSED:
        return _one({table[f"{base}.{s}"] for s in _FUSED[proj] if f"{base}.{s}" in table},
                    path, source)
    return None
