"""NVIDIA ModelOpt checkpoints (``quant_method`` modelopt / modelopt_fp4, or hf_quant_config.json's
``{"producer": {"name": "modelopt"}, "quantization": {...}}``) read as vLLM 0.33 reads them
(ModelOptQuantConfigBase.from_config, modelopt.py) and what one of their linears and routed
experts holds on a rank of an H100 (tests/data/weights_census/modelopt/).

Sized (every Linear and the LM head built with the quant_config, unless ``exclude_modules`` /
``ignore`` names it; embeddings, norms and routers vLLM builds without it stay in the model dtype):
- FP8 (KFp8StaticTensor): the weight at 1 byte, float32 ``weight_scale`` and ``input_scale``
  one a fused shard; experts (ModelOptFp8MoEMethod, the same for every FP8 algo): 1 byte a
  weight, float32 w13 scales two an expert (one non-gated), w2's, and an input scale each;
- FP8_PER_CHANNEL_PER_TOKEN: float32 ``weight_scale`` a row, no input scale;
- FP8_PB_WO: float32 ``weight_scale`` [ceil(n / 128), k / 128], k whole 128s or refused;
- MXFP8 (KMxfp8Static; Marlin on an H100): the weight at 1 byte, uint8 (e8m0) ``weight_scale``
  [n, k / 32], k whole 32s or refused; experts (ModelOptMxFp8FusedMoE) the same, their widths
  whole 32s or refused; bfloat16 models only;
- NVFP4 / W4A16_NVFP4 (KNvfp4Static, Marlin on an H100: the tensors are the checkpoint's): uint8
  ``weight`` [n, k / 2], fp8 ``weight_scale`` [n, k / group], float32 ``weight_scale_2`` a shard,
  NVFP4's float32 ``input_scale`` a shard (W4A16's in the model dtype); k whole 16s or refused;
  experts (ModelOptNvFp4FusedMoE) the same, with float32 global and input scales an expert and
  projection.
Every attention layer (MLA's too) holds four k/v/q/prob scales in the model dtype. A config's
``kv_cache_scheme`` / ``kv_cache_quant_algo`` FP8 makes vLLM's ``--kv-cache-dtype auto`` fp8_e4m3
(resolve_kv_cache_dtype_string): the KV cache is sized so (`kv_cache_dtype`).
MIXED_PRECISION: each module as its ``quantized_layers`` entry says (`kvcore.models.
modelopt_mixed`); a table naming block-FP8 experts or GGML codecs is left with the warning.
As everywhere in the census, the tensors create_weights makes are counted: the kernels' repacks
after loading (Marlin's, CUTLASS's transposes) keep their sizes, bar Marlin's tile padding; the
per-shard scalar scales process_weights_after_loading folds into one (or drops: W4A16's input
scale) differ by a few bytes a layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models import modelopt_mixed
from kvcore.models.fp8_renames import vllm_name

# (`kvcore.models.hf_quant_file`'s mark: the hf_quant_config.json vLLM reads a table from)
FROM_FILE = "_kvcli_hf_quant_config_json"

QUANT_ALGOS = ("FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO", "NVFP4", "W4A16_NVFP4", "MXFP8",
               "MIXED_PRECISION")
SIZED = ("FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO", "NVFP4", "W4A16_NVFP4", "MXFP8")
# (each config's get_supported_act_dtypes: the model dtypes vLLM accepts)
DTYPES = {"modelopt": ("bfloat16", "float16"), "modelopt_fp4": ("bfloat16", "float16",
                                                                 "float8_e4m3fn"),
          "modelopt_mxfp8": ("bfloat16",), "modelopt_mixed": ("bfloat16", "float16")}
# (the names vLLM's _normalize_quantization_config gives a producer-tagged config's algorithm)
_LEGACY = {"FP8": "modelopt", "FP8_PER_CHANNEL_PER_TOKEN": "modelopt", "FP8_PB_WO": "modelopt",
           "NVFP4": "modelopt_fp4", "MIXED_PRECISION": "modelopt_mixed"}
FP4_ALGOS = ("NVFP4", "W4A16_NVFP4")


@dataclass(frozen=True, slots=True)
class ModelOpt:
    algo: str                     # one of SIZED
    method: str                   # the name vLLM resolves: modelopt, modelopt_fp4, modelopt_mxfp8
    exclude: tuple[str, ...]      # vLLM paths, exact / substring / fnmatch globs
    group_size: int = 16
    # the KV cache dtype vLLM gives --kv-cache-dtype auto (None: the model dtype)
    kv_cache: str | None = None
    # MIXED_PRECISION's table (`kvcore.models.modelopt_mixed`): (vLLM path, algorithm) pairs
    layers: tuple[tuple[str, str], ...] = ()
    kv_scales: bool = True        # (mixed: only with a KV cache algorithm, never MLA's)
    # (kvcli's layer prefix, vLLM's) where a module is sized as another's layer: an MTP
    # module's decoder layer, built at model.layers.N (`kvcore.models.mtp_draft`)
    at: tuple[str, str] | None = None


def _algo(quant: dict) -> Any:
    inner = quant.get("quantization")
    return inner.get("quant_algo") if isinstance(inner, dict) else quant.get("quant_algo")


def normalised(quant: Any, method: str, source: str) -> str:
    """The method vLLM resolves a ModelOpt config to: a producer-tagged config's from its
    algorithm, a modelopt* method's by its algorithm's override (vLLM's order)."""
    if not isinstance(quant, dict):
        return method
    inner = quant.get("quantization")
    producer = quant.get("producer")
    legacy = isinstance(inner, dict) and "modelopt_quant_config" in inner
    if (isinstance(producer, dict) and producer.get("name") == "modelopt") or legacy:
        algo = inner.get("quant_algo") if isinstance(inner, dict) else None
        if algo is not None:
            if str(algo).upper() not in _LEGACY:
                raise InputError(f"vLLM refuses it: \"Unknown ModelOpt quant algo: {algo}\"",
                                 path=source or None, field="quantization_config.quantization."
                                                            "quant_algo")
            method = _LEGACY[str(algo).upper()]
    if not method.startswith("modelopt"):
        return method
    algo = str(_algo(quant) or "").upper()
    return ("modelopt" if algo == "FP8" else "modelopt_fp4" if "FP4" in algo else
            "modelopt_mxfp8" if "MXFP8" in algo else
            "modelopt_mixed" if algo == "MIXED_PRECISION" else method)


def kv_cache_dtype(quant: dict) -> str | None:
    """The KV cache dtype vLLM's resolve_kv_cache_dtype_string gives ``auto`` for a ModelOpt
    config: its kv_cache_scheme or kv_cache_quant_algo, fp8 or nvfp4 (None: neither, or one vLLM
    does not know and falls back to auto for)."""
    inner = quant.get("quantization", quant)
    inner = inner if isinstance(inner, dict) else {}
    algo = (inner.get("kv_cache_scheme") or quant.get("kv_cache_scheme")
            or inner.get("kv_cache_quant_algo") or quant.get("kv_cache_quant_algo"))
    if isinstance(algo, dict):
        floats = algo.get("type") == "float"
        algo = ("fp8" if floats and algo.get("dynamic") is False and algo.get("num_bits") == 8
                else "nvfp4" if floats and algo.get("num_bits") == 4 else None)
    return {"fp8": "fp8_e4m3", "nvfp4": "nvfp4"}.get(algo.lower()) if isinstance(algo, str) \
        else None


def _refuse(field: str, why: str, source: str) -> InputError:
    return InputError(f"vLLM refuses it: \"{why}\"", path=source or None,
                      field=f"quantization_config.{field}")


def read(quant: Any, method: str | None, source: str, arch: str = "") -> ModelOpt | None:
    """A ModelOpt config's algorithm and exclude list when kvcli sizes it (None: another
    method, or a mixed-precision table naming what kvcli does not size); vLLM's refusals of the
    config itself."""
    if not isinstance(quant, dict) or method not in DTYPES:
        return None
    kv = kv_cache_dtype(quant)
    if method == "modelopt_mxfp8" and "quantization" not in quant and not quant.get("quant_algo"):
        # (MXFP8's from_config: a MiniMax-style config, its ignored_layers the exclude list)
        quant = {"quantization": {"quant_algo": "MXFP8", "kv_cache_quant_algo": None,
                                  "exclude_modules": quant.get("ignored_layers") or []}}
    nested = "quantization" in quant
    inner = quant["quantization"] if nested else quant
    where = "quantization." if nested else ""
    if not isinstance(inner, dict):
        raise _refuse("quantization", "Expected 'quantization' to be a dictionary in config",
                      source)
    algo = inner.get("quant_algo")
    if not algo:
        raise _refuse(f"{where}quant_algo", "Missing 'quant_algo' in quantization config", source)
    algo = str(algo).upper()
    exclude = inner.get("exclude_modules", []) if nested else quant.get(
        "ignore", quant.get("exclude_modules", []))
    listed = "exclude_modules" if nested or "ignore" not in quant else "ignore"
    if not isinstance(exclude, list):
        raise _refuse(f"{where}{listed}",
                      f"exclude_modules must be a list, got {type(exclude)}", source)
    if not all(isinstance(x, str) for x in exclude):    # (vLLM: `x in path`, a TypeError)
        raise InputError(f"expected a list of module names, got {clipped(exclude)}",
                         path=source or None, field=f"quantization_config.{where}{listed}")
    if algo not in QUANT_ALGOS:
        raise _refuse(f"{where}quant_algo", f"ModelOpt currently only supports: "
                      f"{list(QUANT_ALGOS)} quantizations in vLLM. Please check the "
                      "`hf_quant_config.json` file for your model's quant configuration.", source)
    if method == "modelopt_mixed":
        return _mixed(quant, inner, nested, arch, source, exclude)
    owned = {"modelopt": ("FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO"),
             "modelopt_fp4": FP4_ALGOS}.get(method, ("MXFP8",))
    if method == "modelopt_mxfp8" and nested and (missing := [
            f for f in ("kv_cache_quant_algo", "exclude_modules") if f not in inner]):
        raise _refuse("quantization", "MXFP8 quantization requires the following fields in "
                      f"hf_quant_config.json: {missing}", source)
    if method == "modelopt_mxfp8" and "MXFP8" not in algo:
        raise _refuse(f"{where}quant_algo", "MXFP8 quantization requires a serialized "
                      "checkpoint. Dynamic quantization is not supported.", source)
    if algo not in owned:
        raise _refuse(f"{where}quant_algo", (
            f"Unsupported ModelOpt FP8 quant_algo for vLLM: {algo}. Supported: "
            if method == "modelopt" else f"Unsupported ModelOpt NVFP4 quant_algo: {algo}. "
            "Supported: ") + " / ".join(owned) + ".", source)
    groups = quant.get("config_groups")
    if algo == "NVFP4" and isinstance(groups, dict) and groups and all(
            isinstance(gr, dict) and gr.get("input_activations") is None
            for gr in groups.values()):
        algo = "W4A16_NVFP4"    # (weights only: vLLM routes it through W4A16)
    if nested and algo in FP4_ALGOS and (missing := [
            f for f in ("group_size", "kv_cache_quant_algo", "exclude_modules") if f not in inner]):
        raise _refuse("quantization", "NVFP4 quantization requires the following fields in "
                      f"hf_quant_config.json: {missing}", source)
    group = inner.get("group_size")
    try:
        group = 16 if group is None else int(group)
    except (TypeError, ValueError, OverflowError):
        raise _refuse(f"{where}group_size", f"group_size must be an integer, got "
                      f"{type(group)}", source) from None
    if group < 1:
        # (vLLM takes it, false and 0 included, and fails dividing the widths by it)
        raise InputError(f"must be a positive integer, got {clipped(inner['group_size'])}: "
                         "vLLM divides each weight's width by it", path=source or None,
                         field=f"quantization_config.{where}group_size")
    return ModelOpt("MXFP8" if method == "modelopt_mxfp8" else algo, method,
                    _mapped(tuple(map(str, exclude)), arch), group, kv)


def _mixed(quant: dict, inner: dict, nested: bool, arch: str, source: str,
           exclude: list) -> ModelOpt | None:
    """A MIXED_PRECISION config: its table, and whether attention holds scales (a
    kv_cache_quant_algo, or an 8-bit float kv_cache_scheme). vLLM reads a config without the
    table at its top level from hf_quant_config.json (`kvcore.models.hf_quant_file`)."""
    if "quantized_layers" not in quant:
        found = quant.get(FROM_FILE)
        if not isinstance(found, dict):
            raise _refuse("quantized_layers", "Cannot find the config file for modelopt_mixed",
                          source)
        quant = found
        nested = "quantization" in quant
        inner = quant["quantization"] if nested else quant
        if not isinstance(inner, dict):
            raise _refuse("quantization", "Expected 'quantization' to be a dictionary in "
                          "config", source)
        exclude = inner.get("exclude_modules", []) if nested else quant.get(
            "ignore", quant.get("exclude_modules", []))
    read = modelopt_mixed.read(inner, arch, source,
                               "quantization_config" + (".quantization" if nested else ""))
    if read is None:
        return None
    scheme = quant.get("kv_cache_scheme")
    kv_method = inner.get("kv_cache_quant_algo") if nested else (
        isinstance(scheme, dict) and scheme.get("type") == "float" and scheme.get("num_bits") == 8)
    return ModelOpt("MIXED_PRECISION", "modelopt_mixed", _mapped(tuple(map(str, exclude)), arch),
                    read[1], kv_cache_dtype(quant), read[0], bool(kv_method))


def _mapped(exclude: tuple[str, ...], arch: str) -> tuple[str, ...]:
    """apply_vllm_mapper: ``path*`` (not ``path.*``) split into ``path`` and ``path.*``, then
    each renamed by the class's hf_to_vllm_mapper."""
    out: list[str] = []
    for x in exclude:
        out += [x[:-1], x[:-1] + ".*"] if len(x) >= 2 and x[-1] == "*" and x[-2] != "." else [x]
    return tuple(vllm_name(x, arch) for x in out)


def linear_bytes(q: ModelOpt, parts: tuple[int, ...], k: int, dtype_bytes: int) -> int:
    """One quantised linear's bytes on a rank: its output shards `parts`, input shard `k`."""
    n, shards = sum(parts), len(parts)
    if q.algo == "FP8":
        return n * k + 2 * 4 * shards
    if q.algo == "FP8_PER_CHANNEL_PER_TOKEN":
        return n * k + 4 * n
    if q.algo == "FP8_PB_WO":
        return n * k + 4 * -(-n // 128) * (k // 128)
    if q.algo == "MXFP8":
        return n * k + n * (k // 32)
    inputs = 4 * shards if q.algo == "NVFP4" else dtype_bytes * shards
    return n * (k // 2) + n * (k // q.group_size) + 4 * shards + inputs


def weight_bytes(q: ModelOpt, n: int, k: int) -> int:
    """A quantised linear's weight alone (`linear_bytes` less its scales)."""
    return n * (k // 2) if q.algo in FP4_ALGOS else n * k


def experts_bytes(q: ModelOpt, experts: int, hidden: int, inter: int, shards: int) -> int:
    """The routed experts' bytes on a rank (`inter`: the intermediate width on it; `shards`: 2
    gated, 1 not)."""
    n13 = shards * inter
    if q.algo in FP4_ALGOS:
        weights = n13 * (hidden // 2) + hidden * (inter // 2)
        scales = n13 * (hidden // q.group_size) + hidden * (inter // q.group_size)
        return experts * (weights + scales + 4 * 2 * (shards + 1))
    if q.algo == "MXFP8":
        return experts * (n13 * hidden + hidden * inter + n13 * (hidden // 32)
                          + hidden * (inter // 32))
    return experts * (n13 * hidden + hidden * inter + 4 * (shards + 3))


def refusal(q: ModelOpt, k: int) -> str | None:
    """vLLM's refusal of a quantised linear whose input shard on a rank is `k` wide."""
    if q.algo in FP4_ALGOS and k % 16:
        return "Unsupported model when in features size is not multiple of 16"
    if q.algo == "FP8_PB_WO" and k % 128:
        return f"FP8_PB_WO requires in divisible by 128, got {k}"
    if q.algo == "MXFP8" and k % 32:
        return f"MXFP8 requires input size divisible by 32, got {k}"
    return None


def experts_refusal(q: ModelOpt, hidden: int, inter: int) -> str | None:
    """ModelOptMxFp8FusedMoE's refusal of experts whose widths on a rank are not whole 32s."""
    if q.algo != "MXFP8":
        return None
    if hidden % 32:
        return f"MXFP8 MoE requires hidden_size divisible by 32, got {hidden}."
    if inter % 32:
        return f"MXFP8 MoE requires intermediate_size_per_partition divisible by 32, got {inter}."
    return None


def dtype_refusal(q: ModelOpt, dtype: str) -> str | None:
    """VllmConfig's refusal of a model dtype the config's activations do not take."""
    ok = DTYPES[q.method]
    if dtype in ok:
        return None
    return (f"torch.{dtype} is not supported for quantization method {q.method}. Supported "
            f"dtypes: [{', '.join('torch.' + d for d in ok)}]")

