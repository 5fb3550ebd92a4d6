"""AWQ and GPTQ checkpoints (``quant_method`` awq, awq_marlin, auto_awq, gptq, gptq_marlin,
auto_gptq): the bytes vLLM 0.33 holds on a rank for their int-packed linears and experts, and
the configs and shards it refuses.

vLLM 0.33 reads all six names into AutoAWQConfig or AutoGPTQConfig (auto_awq.py, auto_gptq.py).
Every linear built with the model's quant_config is packed (the ones `kvcore.models.fp8_shapes`
lists, MLA's projections among them; an LM head only with ``"lm_head": true``); embeddings,
norms, routers (DeepSeek's GateLinear takes no quant_config), convolutions and
Mamba1 mixers stay in the model dtype. A linear of input shard ``k`` and output shard ``n``
(``G`` groups: ``k // group_size``, the whole input width a group when it is -1) holds
AWQ: ``qweight`` int32 [k, n / pack], ``qzeros`` int32 [G, n / pack], ``scales`` [G, n];
GPTQ: ``qweight`` int32 [k / pack, n], ``qzeros`` and ``scales`` the same (pack = 32 / bits).
The routed experts (AutoAWQMoEMethod, AutoGPTQMoEMethod) hold the same per expert for w13 and
w2, GPTQ's plus two bias tensors in the model dtype; experts Marlin cannot take fall back to
MoeWNA16 (uint8-packed, `_wna16_experts_bytes`; refused where its group, halved to fit, would
fall below 32: `wna16_refusal`). These are the tensors create_weights makes
(tests/data/weights_census/int_quant/, as an H100 builds them); after loading, Marlin repacks
them into tensors of the same sizes (`_convert_awq_to_standard_format`, the kernels'
repacks), plus a workspace of a few KiB a device and zero-padding for shapes off its tiles,
which are not counted (like buffers).

Refused as vLLM refuses: AWQ of any bits but 4; GPTQ with ``desc_act`` (unless group_size is
-1), of bits/sym other than 4/8 symmetric, or a group size Marlin lacks; an AWQ linear whose
input shard is not whole groups (Marlin takes it not, the fallback AWQ method raises).
compressed-tensors' schemes: `kvcore.models.ct_quant`; GPTQ's ``dynamic`` rules and
``modules_in_block_to_quantize``: `kvcore.models.gptq_rules`. A vision tower's linears:
`kvcore.models.tower_int_quant` for the classes whose towers it lists (`PREFIXES`; those built
without the quant_config stay in the model dtype). Not modelled (the weights counted in the
model dtype, said by `kvcore.models.int_quant_rank.unmodelled_note`): the towers of the other
multimodal classes, and every other quant_method but fp8 and mxfp4 (bitsandbytes vLLM 0.33
does not know: `kvcore.models.quantization` refuses it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models import gptq_rules
from kvcore.models.fp8_renames import vllm_name
from kvcore.models.gptq_rules import Rule

AWQ_NAMES = ("awq", "awq_marlin", "auto_awq")
GPTQ_NAMES = ("gptq", "gptq_marlin", "auto_gptq")
# (methods whose weights kvcli sizes: the rest are counted in the model dtype, with a warning)
SIZED_METHODS = ("fp8", "mxfp4", "compressed-tensors", *AWQ_NAMES, *GPTQ_NAMES)
# (the methods whose linears kvcli quantises on every model: the classes with ledgers or towers
# of their own size these alone, Step3's, Step-3.5's and Molmo's)
LINEAR_METHODS = ("fp8", "compressed-tensors", *AWQ_NAMES, *GPTQ_NAMES)
MARLIN_GROUPS = (-1, 32, 64, 128)


@dataclass(frozen=True, slots=True)
class IntQuant:
    family: str                  # "awq" or "gptq"
    bits: int
    group_size: int
    zero_point: bool             # (AWQ's; GPTQ's sym)
    lm_head: bool
    skips: tuple[str, ...] = ()  # AWQ's modules_to_not_convert (substring match)
    # compressed-tensors' (`kvcore.models.ct_quant`): "wna16", "int8" or "fp8", the weight
    # scales' strategy, static input scales (asymmetric: an int8 zero point) and ignore list
    scheme: str = ""
    strategy: str = "group"
    static_input: bool = False
    asym_input: bool = False
    ignore: tuple[str, ...] = ()
    # GPTQ's dynamic rules and modules_in_block_to_quantize (`kvcore.models.gptq_rules`)
    rules: tuple[Rule, ...] = ()
    blocks: tuple[str, ...] = ()
    # compressed-tensors' config groups, (target, its scheme) in vLLM's order; () for one
    # group on "Linear" (`kvcore.models.ct_groups`)
    targets: tuple[tuple[str, IntQuant], ...] = ()


def _key(quant: dict, keys: tuple[str, ...], source: str, default: Any = None) -> Any:
    for k in keys:
        if k in quant:
            return quant[k]
    if default is not None:
        return default
    raise InputError(f"missing, and vLLM refuses to build it: \"Cannot find any of "
                     f"{list(keys)} in the model's quantization config.\"",
                     path=source or None, field=f"quantization_config.{keys[-1]}")


def read(quant: Any, method: str | None, source: str, arch: str = "") -> IntQuant | None:
    """The AWQ / GPTQ settings of a ``quantization_config`` (None: another method, or one
    vLLM builds with rules kvcli does not model); vLLM's refusals of the config itself. The
    names a list leaves unquantised are renamed by the model class `arch`'s mapper first, as
    vLLM's apply_vllm_mapper does (`kvcore.models.fp8_renames`)."""
    if isinstance(quant, dict) and method == "compressed-tensors":
        from kvcore.models import ct_quant  # (it builds on IntQuant)

        return ct_quant.read(quant, source, arch)
    if not isinstance(quant, dict) or method not in AWQ_NAMES + GPTQ_NAMES:
        return None

    def refuse(field: str, why: str) -> InputError:
        return InputError(f"vLLM refuses to build it with {field} "
                          f"{clipped(json.dumps(quant.get(field)))}: \"{why}\"",
                          path=source or None, field=f"quantization_config.{field}")

    if method in AWQ_NAMES:
        bits = _key(quant, ("w_bit", "bits"), source)
        if bits != 4:
            raise refuse("bits", f"Unsupported num_bits = {bits}. Supported: 4. For 8-bit AWQ, "
                         "use Marlin backend by setting backend='awq:marlin' or "
                         "backend='marlin'.")
        skips = quant.get("modules_to_not_convert") or []
        # (vLLM iterates it and tests each name `in` a module path: a number is a TypeError
        # there, as it was here; a list's number too, which kvcli read as its digits)
        if isinstance(skips, (int, float)) or (isinstance(skips, list) and not all(
                isinstance(s, str) for s in skips)):
            raise InputError(f"expected a list of module names, got {clipped(skips)}",
                             path=source or None,
                             field="quantization_config.modules_to_not_convert")
        group = _key(quant, ("q_group_size", "group_size"), source)
        if not isinstance(group, int) or isinstance(group, bool) or not (
                group == -1 or 1 <= group < 2**31):
            # (int() made 1.5 a group of 1 and raised on NaN; vLLM's shape checks fail on both)
            raise InputError(f"expected -1 or an integer >= 1, got {clipped(group)}",
                             path=source or None, field="quantization_config."
                             + ("q_group_size" if "q_group_size" in quant else "group_size"))
        return IntQuant("awq", 4, group,
                        bool(_key(quant, ("zero_point",), source)), bool(quant.get("lm_head")),
                        tuple(vllm_name(str(s), arch) for s in skips))
    bits, group = _key(quant, ("bits",), source), _key(quant, ("group_size",), source)
    if _key(quant, ("desc_act",), source) and group != -1:
        raise refuse("desc_act", "GPTQ group activation ordering (desc_act=True) is no longer "
                     "supported. Use a checkpoint with static activation ordering or "
                     "desc_act=False.")
    sym = _key(quant, ("sym",), source)
    if (bits, bool(sym)) not in ((4, True), (8, True)):
        raise refuse("sym" if bits in (4, 8) else "bits",
                     f"Unsupported quantization config: bits={bits}, sym={sym}")
    if group not in MARLIN_GROUPS:
        raise refuse("group_size", f"Marlin does not support group_size = {group}. Only "
                     f"group_sizes = {list(MARLIN_GROUPS)} are supported.")
    rules, blocks = gptq_rules.read(quant, bool(quant.get("desc_act")), source, arch)
    return IntQuant("gptq", bits, group, True, bool(quant.get("lm_head")), rules=rules,
                    blocks=blocks)


def linear_bytes(q: IntQuant, out: int, k: int, full_in: int, dtype_bytes: int) -> int:
    """One packed linear's bytes on a rank: output shard `out`, input shard `k` of `full_in`."""
    pack = 32 // q.bits
    groups = k // (q.group_size if q.group_size != -1 else full_in)
    if q.family == "gptq" and q.group_size == -1:
        groups = 1          # (channelwise: one row of scales, repeated on row-parallel ranks)
    weight = k * (out // pack) * 4 if q.family == "awq" else (k // pack) * out * 4
    return weight + groups * (out // pack) * 4 + groups * out * dtype_bytes


def experts_bytes(q: IntQuant, experts: int, hidden: int, inter: int, shards: int,
                  dtype_bytes: int) -> int:
    """The routed experts' bytes on a rank (`inter`: the intermediate width on it)."""
    if not marlin_experts(q, hidden, inter):
        return _wna16_experts_bytes(q, experts, hidden, inter, shards, dtype_bytes)
    pack, n13 = 32 // q.bits, shards * inter
    g13 = hidden // q.group_size if q.group_size != -1 else 1
    g2 = inter // q.group_size if q.group_size != -1 else 1
    weight = (hidden * (n13 // pack) + inter * (hidden // pack) if q.family == "awq" else
              (hidden // pack) * n13 + (inter // pack) * hidden) * 4
    scales = (g13 * n13 + g2 * hidden) * dtype_bytes
    zeros = (g13 * (n13 // pack) + g2 * (hidden // pack)) * 4
    bias = (n13 + hidden) * dtype_bytes if q.family == "gptq" else 0
    return experts * (weight + scales + zeros + bias)


def marlin_experts(q: IntQuant, hidden: int, inter: int) -> bool:
    """Whether Marlin's MoE method takes the experts (check_moe_marlin_supports_layer: the
    hidden size whole 128s, the intermediate shard `inter` whole groups)."""
    return not (hidden % 128 or (q.group_size > 0 and inter % q.group_size))


def wna16_refusal(q: IntQuant, hidden: int, inter: int) -> str | None:
    """MoeWNA16Method's refusal of experts Marlin cannot take: it halves the group until both
    widths on a rank are whole groups, asserting it stays at least 32 (moe_wna16.py)."""
    if marlin_experts(q, hidden, inter) or q.group_size == -1:
        return None
    gs = q.group_size
    while inter % gs or hidden % gs:
        gs //= 2
        if gs < 32:
            return "AssertionError: assert group_size >= 32"
    return None


def _wna16_experts_bytes(q: IntQuant, experts: int, hidden: int, inter: int, shards: int,
                         dtype_bytes: int) -> int:
    """Experts Marlin's MoE method cannot take (the hidden size not whole 128s, or the
    intermediate shard not whole groups: check_moe_marlin_supports_layer): vLLM falls back to
    MoeWNA16Method (moe_wna16.py), uint8-packed, its group halved until both widths are whole
    groups, zero points only for AWQ's zero_point."""
    pack, gs, n13 = 8 // q.bits, q.group_size, shards * inter
    while gs > 32 and (inter % gs or hidden % gs):
        gs //= 2
    weight = n13 * (hidden // pack) + hidden * (inter // pack)
    scales = (n13 * (hidden // gs) + hidden * (inter // gs)) * dtype_bytes
    zeros = (n13 // pack) * (hidden // gs) + (hidden // pack) * (inter // gs) \
        if q.family == "awq" and q.zero_point else 0
    return experts * (weight + scales + zeros)


def awq_refusal(q: IntQuant, out: int, k: int, full_in: int) -> str | None:
    """AWQ's refusal of a linear's shard, as an H100 builds it: Marlin takes a layer whose
    input shard is whole groups (or one group wider than the input); the rest fall back to
    AutoAWQLinearMethod, which checks both shards (so does every layer where Marlin lacks
    the group size or the zero point)."""
    gs = q.group_size if q.group_size != -1 else full_in
    marlin = q.zero_point and q.group_size in MARLIN_GROUPS
    if marlin and (q.group_size == -1 or q.group_size >= full_in or k % q.group_size == 0):
        return None
    if k % gs:
        return ("The input size is not aligned with the quantized weight shape. This can be "
                "caused by too large tensor parallel size.")
    if out % (32 // q.bits):
        return ("The output size is not aligned with the quantized weight shape. This can be "
                "caused by too large tensor parallel size.")
    return None
