"""compressed-tensors checkpoints (``quant_method`` compressed-tensors, llm-compressor's): the
schemes kvcli sizes, read as vLLM 0.33 picks them on an H100 (CompressedTensorsConfig
._get_scheme_from_parts), and what one of their linears holds on a rank.

Sized: one config group targeting ``Linear`` with
- W4A16 / W8A16 (``pack-quantized``, int weights of 2 to 8 bits, ``group`` or ``channel``, no
  input quantisation: CompressedTensorsWNA16): ``weight_packed`` int32 [n, ceil(k * bits /
  32)], ``weight_scale`` [n, G] in the model dtype (G = k / group_size; 1 channelwise),
  ``weight_shape`` int64 [2], and for asymmetric weights ``weight_zero_point`` int32
  [ceil(n * bits / 32), G];
- W8A8 int8 (``int-quantized``, 8-bit int weights and inputs, ``channel`` or ``tensor``:
  CompressedTensorsW8A8Int8) and W8A8 fp8 (``float-quantized``, FP8_DYNAMIC and static fp8:
  CompressedTensorsW8A8Fp8, an H100 supports it): the weight at 1 byte, float32
  ``weight_scale`` [n] (channel) or one a fused shard (tensor), and with static inputs a
  float32 ``input_scale`` (int8: one, plus an int8 zero point when asymmetric; fp8: one a
  shard).
Every attention layer built with the quant_config also holds k/v/q scales (float32) and zero
points (model dtype), one each (CompressedTensorsKVCacheMethod). The ``ignore`` list names vLLM
module paths exactly or as ``re:`` regexes (re.match), a fused linear when it or all its
shards match (some: vLLM refuses); the LM head is never quantised (not a LinearBase).
The routed experts under W8A8 fp8 (CompressedTensorsW8A8Fp8MoEMethod): 1 byte a weight, float32
scales a row (channel) or one a shard (tensor), static input scales one a projection; under
W8A8 int8 (CompressedTensorsW8A8Int8MoEMethod: channelwise weights, dynamic inputs) the same
with float32 scales a row (int8 experts with static inputs or tensor-wise weights vLLM refuses:
`kvcore.models.int_quant_rank.check`); under W4A16 / W8A16 (CompressedTensorsWNA16MoEMethod)
`_wna16_experts_bytes`, refused where a rank's widths are not whole groups (`experts_refusal`).
MLA's attention holds no k/v/q scales (tests/data/weights_census/int_quant/).
Several config groups, or targets other than ``Linear`` (regexes, module paths, class names):
each module's scheme as `kvcore.models.ct_groups` matches it, the embedding's and the LM head's
too for the classes in `VOCAB_PATHS` (the embedding WNA16 alone, CompressedTensorsEmbedding-
WNA16Int: `embedding_bytes`; the LM head as a linear). Not sized (counted unquantised, with a
warning): class-name targets, or targets reaching the embedding or the LM head, of other
classes, a tied LM head a target reaches, sparsity and transforms, ``attn_head`` KV scales,
block fp8, other formats.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.fp8_renames import vllm_name
from kvcore.models.fused_shards import DIFFERENT, all_or_none
from kvcore.models.int_quant import IntQuant
from kvcore.models.rule_regex import user_regex

WNA16_BITS = range(2, 9)
# (the embedding's and LM head's paths in most model classes: a group's regex or path reaching
# them has vLLM quantise them, CompressedTensorsEmbeddingWNA16Int and the LM head's scheme)
_EMBEDDINGS = ("model.embed_tokens", "lm_head", "")
# The classes whose modules kvcli matches class-name targets against, and their embedding's
# path (llama.py builds it with no prefix: ""; recorded in tests/data/weights_census/
# quant_rules/, the -ct-class- and -ct-embed- cases)
VOCAB_PATHS = {"LlamaForCausalLM": "", "Qwen3MoeForCausalLM": "model.embed_tokens"}


def read(quant: dict[str, Any], source: str, arch: str = "") -> IntQuant | None:
    """The schemes of a compressed-tensors ``quantization_config`` when kvcli sizes them (its
    ignore list's and targets' paths renamed by the class `arch`'s mapper, ``re:`` patterns
    not): one group on ``Linear``, or several (`kvcore.models.ct_groups`)."""
    groups = quant.get("config_groups")
    kv = quant.get("kv_cache_scheme")
    if (not isinstance(groups, dict) or quant.get("sparsity_config")
            or quant.get("transform_config")
            or (isinstance(kv, dict) and kv.get("strategy") == "attn_head")):
        return None
    listed = quant.get("ignore") or []
    if not isinstance(listed, list) or not all(isinstance(x, str) for x in listed):
        # (vLLM fails on a number with a traceback, and tests a string's characters)
        raise InputError(f"must be a list of module paths and re: patterns, got "
                         f"{clipped(listed)}", path=source or None,
                         field="quantization_config.ignore")
    _check_patterns(listed, source, "quantization_config.ignore")
    ignore = tuple(_renamed(x, arch) for x in listed)
    schemes: dict[str, IntQuant] = {}
    for name, group in groups.items():
        targets = group.get("targets") if isinstance(group, dict) else None
        if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
            return None
        _check_patterns(targets, source, "quantization_config.config_groups")
        if len(targets) == 1 and targets[0].endswith("Attention"):
            continue    # (vLLM drops it: attention quantisation goes with the KV cache's)
        if arch not in VOCAB_PATHS and any(t != "Linear" and not t.startswith("re:")
                                           and "." not in t for t in targets):
            return None     # (a class name kvcli does not match this class's modules by)
        q = _scheme(group, group.get("format") or quant.get("format"), source, ignore,
                    f"quantization_config.config_groups.{name}.weights.group_size")
        if q is None:
            return None
        for t in targets:
            schemes[_renamed(t, arch)] = q
    if not schemes or list(schemes) == ["Linear"]:
        return schemes.get("Linear")
    if arch not in VOCAB_PATHS and any(not _matches(ignore, m) and any(
            _matches((t,), m) for t in schemes) for m in _EMBEDDINGS):
        return None     # (vLLM packs an embedding or LM head a target names: not modelled)
    base = schemes.get("Linear", next(iter(schemes.values())))
    return replace(base, targets=tuple(schemes.items()))


def _check_patterns(names: list[str], source: str, field: str) -> None:
    """vLLM re.match-es each ``re:`` entry against module paths: one that is no regex, or can
    backtrack for hours, is refused here (`kvcore.models.rule_regex`)."""
    for name in names:
        if name.startswith("re:"):
            user_regex(name[3:], clipped(name), source, field)


def _renamed(name: str, arch: str) -> str:
    return vllm_name(name, arch) if "." in name and not name.startswith("re:") else name


def _scheme(group: dict[str, Any], fmt: Any, source: str, ignore: tuple[str, ...],
            group_field: str) -> IntQuant | None:
    """One config group's scheme on an H100 (None: one kvcli does not size); `group_field`
    names its weights' group_size in a refusal."""
    w, inp = group.get("weights"), group.get("input_activations")
    if not isinstance(w, dict):
        return None
    bits, kind, strategy = w.get("num_bits"), w.get("type"), w.get("strategy")
    if fmt == "pack-quantized" and kind == "int" and inp is None and bits in WNA16_BITS \
            and strategy in ("group", "channel"):
        gs = w.get("group_size")
        if strategy == "group" and not isinstance(gs, int):
            raise InputError("vLLM refuses to build it: \"Pack-quantized format requires group "
                             "quantization or channelwise quantization, but found no group "
                             "size and strategy is not channelwise.\"", path=source or None,
                             field="quantization_config.config_groups")
        if gs is not None and (isinstance(gs, bool) or not isinstance(gs, int)
                               or not (gs == -1 or 1 <= gs < 2**31)):
            # (0 divided the columns: a ZeroDivisionError; -2 was a negative group count)
            raise InputError(f"expected -1 or an integer >= 1, got {clipped(gs)}",
                             path=source or None, field=group_field)
        return IntQuant("ct", int(bits or 0), gs if isinstance(gs, int) else -1,
                        not w.get("symmetric", True), False, ignore=ignore, scheme="wna16")
    if not isinstance(inp, dict) or bits != 8 or inp.get("num_bits") != 8 \
            or strategy not in ("channel", "tensor") or inp.get("type") != kind:
        return None
    static = not inp.get("dynamic", False)
    if fmt in ("int-quantized", "naive-quantized") and kind == "int":
        return IntQuant("ct", 8, -1, False, False, ignore=ignore, scheme="int8",
                        strategy=strategy, static_input=static,
                        asym_input=not inp.get("symmetric", True))
    if fmt in ("float-quantized", "naive-quantized") and kind == "float":
        return IntQuant("ct", 8, -1, False, False, ignore=ignore, scheme="fp8",
                        strategy=strategy, static_input=static)
    return None


def linear_bytes(q: IntQuant, parts: tuple[int, ...], k: int, dtype_bytes: int) -> int:
    """One linear's bytes on a rank: its output shards `parts`, input shard `k`."""
    n = sum(parts)
    if q.scheme == "wna16":
        groups = k // q.group_size if q.group_size != -1 else 1
        zeros = -(-n * q.bits // 32) * groups * 4 if q.zero_point else 0
        return n * -(-k * q.bits // 32) * 4 + n * groups * dtype_bytes + 16 + zeros
    scales = (n if q.strategy == "channel" else len(parts)) * 4
    inputs = 0
    if q.static_input:
        inputs = 4 + (1 if q.asym_input else 0) if q.scheme == "int8" else 4 * len(parts)
    return n * k + scales + inputs


def embedding_bytes(q: IntQuant, rows: int, hidden: int, dtype_bytes: int, path: str,
                    source: str) -> int:
    """CompressedTensorsEmbeddingWNA16Int's tensors on a rank: int32 ``weight_packed`` [rows,
    hidden // (32 / bits)], ``weight_scale`` [rows, hidden / group_size] (channel: 1) in the
    model dtype, int64 ``weight_shape`` [2]. vLLM asks only that the weights be int, static,
    group- or channel-wise (W8A8 int8's channelwise weights: 8-bit, the inputs' scheme
    ignored); others it refuses."""
    if q.scheme == "fp8" or (q.scheme == "int8" and q.strategy != "channel"):
        raise InputError(f"a config group reaches the embedding ({path or 'no path'}) with "
                         f"{q.scheme} {q.strategy}-wise weights, and vLLM refuses to build it: "
                         "\"compressed-tensors "
                         "embeddings only support weight-only INT group/channel (WNA16) "
                         "quantization\"", path=source or None,
                         field="quantization_config.config_groups")
    groups = hidden // q.group_size if q.group_size != -1 else 1
    return rows * (hidden // (32 // q.bits)) * 4 + rows * groups * dtype_bytes + 16


def experts_bytes(q: IntQuant, experts: int, hidden: int, inter: int, shards: int,
                  dtype_bytes: int) -> int:
    """The routed experts' bytes on a rank (`inter`: the intermediate width on it)."""
    if q.scheme == "wna16":
        return _wna16_experts_bytes(q, experts, hidden, inter, shards, dtype_bytes)
    if q.scheme == "int8":
        # (CompressedTensorsW8A8Int8MoEMethod: int8 weights, float32 scales a row)
        return experts * (shards * inter * hidden + hidden * inter + 4 * (shards * inter + hidden))
    # (W8A8 fp8, CompressedTensorsW8A8Fp8MoEMethod: 1 byte a weight, float32 scales a row
    # (channel) or a shard (tensor), static input scales one a projection)
    scales = shards * inter + hidden if q.strategy == "channel" else shards + 1
    return experts * (shards * inter * hidden + hidden * inter
                      + 4 * (scales + (2 if q.static_input else 0)))


def _wna16_experts_bytes(q: IntQuant, experts: int, hidden: int, inter: int, shards: int,
                         dtype_bytes: int) -> int:
    """CompressedTensorsWNA16MoEMethod's tensors, N-first as the checkpoint holds them: int32
    ``w13/w2_weight_packed`` [n, k * bits / 32], scales [n, k / group] in the model dtype, zero
    points [n * bits / 32, k / group] when asymmetric, and ``w13/w2_weight_shape`` [2] an
    expert, in the model dtype (torch.empty)."""
    n13 = shards * inter
    g13, g2 = (hidden // q.group_size, inter // q.group_size) if q.group_size != -1 else (1, 1)
    weight = (n13 * hidden + hidden * inter) * q.bits // 32 * 4
    scales = (n13 * g13 + hidden * g2) * dtype_bytes
    zeros = (n13 * q.bits // 32 * g13 + hidden * q.bits // 32 * g2) * 4 if q.zero_point else 0
    return experts * (weight + scales + zeros + 4 * dtype_bytes)


def experts_refusal(q: IntQuant, hidden: int, inter: int) -> str | None:
    """CompressedTensorsWNA16MoEMethod's refusal of experts whose widths on a rank are not
    whole groups."""
    if q.scheme != "wna16" or q.group_size == -1:
        return None
    if hidden % q.group_size:
        return (f"CompressedTensors WNA16 MoE requires hidden_size ({hidden}) to be divisible "
                f"by group_size ({q.group_size}).")
    if inter % q.group_size:
        return ("CompressedTensors WNA16 MoE with static group scales requires the MoE "
                f"intermediate size per tensor-parallel partition ({inter}) to be divisible "
                f"by group_size ({q.group_size}). Scale groups would otherwise cross TP shard "
                "boundaries; use a compatible TP size or enable expert parallelism.")
    return None


def group_refusal(q: IntQuant, k: int, path: str) -> str | None:
    """CompressedTensorsWNA16's refusal of an input shard that is not whole groups."""
    if q.scheme != "wna16" or q.group_size == -1 or k % q.group_size == 0:
        return None
    return (f"Weight input_size_per_partition={k} for layer '{path}' is not divisible by "
            f"group_size={q.group_size}. This happens when tensor_parallel_size splits the "
            "layer input into shards that are not a whole number of quant groups. Consider "
            "reducing tensor_parallel_size.")


def _matches(ignore: tuple[str, ...], path: str) -> bool:
    return any(re.match(x[3:], path) if x.startswith("re:") else x == path for x in ignore)


def ignored(q: IntQuant, path: str, shards: tuple[str, ...] | None, source: str = "") -> bool:
    """Whether the ignore list leaves the linear at `path` (fused of `shards`) unquantised."""
    if _matches(q.ignore, path) or not shards:
        return _matches(q.ignore, path)
    proj = path.split(".")[-1]
    named = [_matches(q.ignore, path.replace(proj, s)) for s in shards]
    return all_or_none(named, lambda: f"names some but not all shards of {path}", path, source,
                       "quantization_config.ignore", DIFFERENT)
