"""The calibration file (`kvcli calibrate --gpu`, schema ``kvcli-clock-calibration/1``):
read, checked field by field, and turned into the roofline's GPU ceilings and factors.

Layout (docs/clock.md, "Calibration on a GPU", shows a whole file):
``schema``, ``created``, ``tool``; ``gpu`` {name, mem_gb, ...}; ``scope`` {model, dtype,
kv_dtype, tp, block_size, geometry {GEOMETRY_KEYS}}; ``ceilings`` {copy_tbps, gemm_bf16_tflops, gemm_fp8_tflops|null};
``tables`` {gemm, decode_attention, prefill_attention, elementwise: lists of rows};
``factors`` {eta_gemm_c, eta_gemm_m, eta_attn, eta_kv, eta_elementwise, t_min_us {gemm,
attention, elementwise}, c_step_us, c_req_us, cpu_terms}; ``fit`` {loo_mape_pct {table: %},
undetermined [factor keys no point binds]};
``provenance``. A bad file is one `InputError` naming the file and the field (exit 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from kvcore.clock.factors import DEFAULT_FACTORS, Factors
from kvcore.clock.gpus import Gpu, find_gpu
from kvcore.errors import InputError
from kvcore.models.geometry import ModelGeometry
from kvcore.read_once import ReadOnce
from kvcore.sources import read_json

SCHEMA = "kvcli-clock-calibration/1"
CPU_NAME_PREFIX = "cpu ("       # gpu.name of a `kvcli calibrate --device cpu` file
TABLE_ROWS = {"gemm": ("m", "n", "k", "us"), "decode_attention": ("batch", "ctx", "us"),
              "prefill_attention": ("chunk", "ctx", "us"),
              "elementwise": ("tokens", "bytes", "us")}
# (key, an efficiency: > 0, it divides; else microseconds, a CPU term that may be 0)
_FACTOR_KEYS = (("eta_gemm_c", True), ("eta_gemm_m", True), ("eta_attn", True),
                ("eta_kv", True), ("eta_elementwise", True), ("c_step_us", False),
                ("c_req_us", False))
# The shapes a file's GEMMs and attention were measured at: a file is for the model whose
# geometry this is, whatever its name (a config.json without _name_or_path is named by its
# model_type, so every such Llama was "llama" and a 2-layer test model's file was accepted
# for Llama-3.1-8B)
GEOMETRY_KEYS = ("num_layers", "hidden_size", "num_attention_heads", "num_kv_heads", "head_dim",
                 "intermediate_size", "vocab_size")
# ... and what else makes its kernels other ones with the same shapes (Mixtral has Mistral's
# seven numbers): compared as they are, checked present
KIND_KEYS = ("num_experts", "quantization", "layer_kinds")


def scope_geometry(g: ModelGeometry) -> dict[str, Any]:
    return {**{k: int(getattr(g, k)) for k in GEOMETRY_KEYS}, "num_experts": g.num_experts,
            "quantization": g.quantization, "layer_kinds": sorted(set(g.layer_kinds))}


@dataclass(frozen=True, slots=True)
class Calibration:
    path: str
    doc: dict
    gpu: Gpu
    factors: Factors


def read_calibration(path: str) -> Calibration:
    """The file read and checked, once per version of it in a process (`kvcore.read_once`:
    a run's start-up asks three times, a cluster's every replica again, and - had nothing left
    the second time); a bad file raises the same `InputError` each time it is asked for."""
    return _READ(path)


def _read(path: str) -> Calibration:
    name, doc = read_json(path)
    return check_calibration(doc, name)


_READ = ReadOnce(_read)


def _get(doc: Any, key: str, path: str, where: str = "") -> Any:
    field = f"{where}.{key}" if where else key
    if not isinstance(doc, dict):
        raise InputError("must be an object", path=path, field=where)
    if key not in doc:
        raise InputError("missing", path=path, field=field)
    return doc[key]


def _number(v: Any, path: str, field: str, *, positive: bool) -> float:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and (
        v > 0 if positive else v >= 0)
    if not ok:
        raise InputError(f"must be a finite number {'> 0' if positive else '>= 0'}, got {v!r}",
                         path=path, field=field)
    return float(v)


# What the clock reads from a file, within bounds no GPU is outside of: a step time follows
# from them, and c_step_us 1e300 (or eta_kv 1e-320: an infinite step) made a replay's metrics
# snapshots and a cluster's clock loop for ever, as `fixed:1e300` did (the clocks' hour cap).
_HOUR_US = 3.6e9
BOUNDS = {"eta": (1e-6, 100.0), "us": (0.0, _HOUR_US), "copy_tbps": (1e-6, 1e3),
          "tflops": (1e-6, 1e6), "mem_gb": (1e-3, 1e6)}


def _bounded(v: Any, path: str, field: str, kind: str) -> float:
    x = _number(v, path, field, positive=kind != "us")
    lo, hi = BOUNDS[kind]
    if not lo <= x <= hi:
        raise InputError(f"must be from {lo:g} to {hi:g}, got {v!r}", path=path, field=field)
    return x


def _obj(doc: dict, key: str, path: str, where: str = "") -> dict:
    v = _get(doc, key, path, where)
    if not isinstance(v, dict):
        raise InputError("must be an object", path=path, field=f"{where}.{key}" if where else key)
    return v


def _text(d: dict, key: str, path: str, where: str) -> str:
    v = _get(d, key, path, where)
    if not isinstance(v, str) or not v:
        raise InputError(f"must be a non-empty string, got {v!r}", path=path,
                         field=f"{where}.{key}")
    return v


def check_calibration(doc: Any, path: str) -> Calibration:
    """The file's content checked; the GPU (its measured ceilings) and factors it gives."""
    if not isinstance(doc, dict):
        raise InputError("a calibration file must hold a JSON object", path=path)
    schema = _get(doc, "schema", path)
    if schema != SCHEMA:
        raise InputError(f"unsupported schema {schema!r} (this kvcli reads {SCHEMA!r})",
                         path=path, field="schema")
    gpu = _obj(doc, "gpu", path)
    gpu_name = _text(gpu, "name", path, "gpu")
    mem_gb = _bounded(_get(gpu, "mem_gb", path, "gpu"), path, "gpu.mem_gb", "mem_gb")
    scope = _obj(doc, "scope", path)
    for key in ("model", "dtype", "kv_dtype"):
        _text(scope, key, path, "scope")
    if "geometry" not in scope:
        raise InputError("missing: a file from before kvcli recorded the model's geometry "
                         "(calibrate again)", path=path, field="scope.geometry")
    geo = _obj(scope, "geometry", path, "scope")
    for key in KIND_KEYS:
        _get(geo, key, path, "scope.geometry")
    for field, v in (("tp", _get(scope, "tp", path, "scope")),
                     *((f"geometry.{k}", _get(geo, k, path, "scope.geometry"))
                       for k in GEOMETRY_KEYS)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise InputError(f"must be a positive integer, got {v!r}", path=path,
                             field=f"scope.{field}")
    ceil = _obj(doc, "ceilings", path)
    copy = _bounded(_get(ceil, "copy_tbps", path, "ceilings"), path, "ceilings.copy_tbps",
                    "copy_tbps")
    bf16 = _bounded(_get(ceil, "gemm_bf16_tflops", path, "ceilings"), path,
                    "ceilings.gemm_bf16_tflops", "tflops")
    fp8 = _get(ceil, "gemm_fp8_tflops", path, "ceilings")
    if fp8 is not None:
        fp8 = _bounded(fp8, path, "ceilings.gemm_fp8_tflops", "tflops")
    tables = _obj(doc, "tables", path)
    for table, keys in TABLE_ROWS.items():
        rows = _get(tables, table, path, "tables")
        if not isinstance(rows, list):
            raise InputError("must be a list of rows", path=path, field=f"tables.{table}")
        for i, row in enumerate(rows):
            for key in keys:
                _number(_get(row, key, path, f"tables.{table}[{i}]"), path,
                        f"tables.{table}[{i}].{key}", positive=key != "ctx")
    fac = _obj(doc, "factors", path)
    vals = {k: _bounded(_get(fac, k, path, "factors"), path, f"factors.{k}",
                        "eta" if eta else "us") for k, eta in _FACTOR_KEYS}
    floors = _get(fac, "t_min_us", path, "factors")
    fl = {k: _bounded(_get(floors, k, path, "factors.t_min_us"), path,
                      f"factors.t_min_us.{k}", "us") for k in ("gemm", "attention", "elementwise")}
    fit = _obj(doc, "fit", path)
    if not isinstance(_get(fit, "loo_mape_pct", path, "fit"), dict):
        raise InputError("must be an object", path=path, field="fit.loo_mape_pct")
    loose = _get(fit, "undetermined", path, "fit")
    names = [k for k, _ in _FACTOR_KEYS]
    if not isinstance(loose, list) or not all(x in names for x in loose):
        raise InputError(f"must be a list of factor keys ({', '.join(names)}), got {loose!r}",
                         path=path, field="fit.undetermined")
    factors = replace(DEFAULT_FACTORS, gemm_compute=vals["eta_gemm_c"],
                      gemm_memory=vals["eta_gemm_m"], attention_compute=vals["eta_attn"],
                      kv_memory=vals["eta_kv"], gemm_floor_us=fl["gemm"],
                      attention_floor_us=fl["attention"], cpu_step_us=vals["c_step_us"],
                      cpu_request_us=vals["c_req_us"])
    return Calibration(path, doc, measured_gpu(gpu_name, mem_gb, copy, bf16, fp8), factors)


def measured_gpu(name: str, mem_gb: float, copy_tbps: float, bf16: float,
                 fp8: float | None) -> Gpu:
    """A `Gpu` whose peaks are the measured ceilings (links from the preset of that name, if
    any: one GPU cannot measure them)."""
    try:
        preset: Gpu | None = find_gpu(name)
    except InputError:
        preset = None
    return Gpu(preset.name if preset else name, name, mem_gb, copy_tbps, bf16, fp8,
               preset.link_gbps if preset else None, preset.link_kind if preset else "unknown",
               False, "measured by kvcli calibrate (ceilings: copy bandwidth, largest GEMM)")


def check_scope(cal: Calibration, g: ModelGeometry, *, kv_dtype: str, tp: int) -> None:
    """Refuse a file made for another model geometry, dtype, KV dtype or tensor-parallel size
    (the name is not compared: the same shapes under another name are the same kernels)."""
    scope = cal.doc["scope"]
    for key, have in scope_geometry(g).items():
        if scope["geometry"][key] != have:
            raise InputError(f"the file was measured for {scope['model']!r} with {key} "
                             f"{scope['geometry'][key]}, {g.name} has {have} (calibrate again "
                             "for it)", path=cal.path, field=f"scope.geometry.{key}")
    for key, want in (("dtype", g.dtype), ("kv_dtype", kv_dtype), ("tp", tp)):
        if scope[key] != want:
            raise InputError(f"the file was measured for {scope[key]!r}, this run has {want!r} "
                             "(calibrate again for it)", path=cal.path, field=f"scope.{key}")


def calibration_caveat(cal: Calibration) -> str | None:
    """What a user must be told beside a calibrated clock's times: a file measured on a CPU
    (`kvcli calibrate --device cpu`, the tests' smoke run), or factors no measurement
    determined (their times are upper bounds); None for a sound file."""
    notes = []
    if str(cal.doc["gpu"]["name"]).startswith(CPU_NAME_PREFIX):
        notes.append("it was measured on a CPU under the Triton interpreter (a smoke run: its "
                     "numbers describe no GPU)")
    loose = cal.doc["fit"]["undetermined"]
    if loose:
        notes.append(f"no measured point determined {', '.join(loose)} (a lower bound: times "
                     "that depend on it are too long; calibrate with --grid full)")
    return f"calibration {cal.path}: {'; '.join(notes)}" if notes else None
