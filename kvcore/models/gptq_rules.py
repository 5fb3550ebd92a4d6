"""GPTQ's per-module rules as vLLM 0.33 applies them (AutoGPTQConfig, utils/gptq_utils.py):
``dynamic`` (GPTQModel's) and ``modules_in_block_to_quantize``.

``dynamic`` maps a regex to overrides. Its rules are tried in the config's order against a
module's vLLM path (``model.layers.0.self_attn.qkv_proj``, a fused linear by its fused name;
the LM head ``lm_head``, the routed experts ``model.layers.0.mlp.experts``) with re.match, not
renamed: the first that matches decides. One written ``-:regex`` leaves the module
unquantised (the model dtype); ``+:regex`` (or a bare regex) packs it with its ``bits``,
``group_size``, ``sym`` and ``desc_act`` in place of the config's (an int, an int, a bool, a
bool; other values leave the config's). A rule turning ``desc_act`` on with groups is refused
with the config (normalize_and_validate_gptq_desc_act); bits/sym other than 4/8 symmetric and a
group size Marlin lacks when the module is built, whatever the TP (override_config,
verify_marlin_supported).

``modules_in_block_to_quantize`` (a list, or a list of lists, flattened; renamed by the class's
hf_to_vllm_mapper as AWQ's list is) names the linears packed, as substrings of their path; a
fused linear by its shards, all or none (`kvcore.models.fused_shards`); every other linear, the
LM head among them, is unquantised. It does not reach the routed experts. Without it vLLM reads
the list from the checkpoint's safetensors (the modules holding int tensors); kvcli, with the
config alone, packs every linear, as vLLM does when it finds no metadata.

Experts Marlin cannot take at the config's group size fall back to MoeWNA16 with the config's
own settings, neither rule applied (`kvcore.models.int_quant._wna16_experts_bytes`).
Checked against vLLM's classes (tests/data/weights_census/quant_rules/).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from kvcore.errors import InputError, clipped
from kvcore.models.fp8_renames import vllm_name
from kvcore.models.fused_shards import all_or_none
from kvcore.models.rule_regex import user_regex

if TYPE_CHECKING:
    from kvcore.models.int_quant import IntQuant

MARLIN_GROUPS = (-1, 32, 64, 128)
DESC_ACT = ("GPTQ group activation ordering (desc_act=True) is no longer supported, but is "
            "enabled by dynamic rule {}. Use a checkpoint with static activation ordering or "
            "desc_act=False.")


@dataclass(frozen=True, slots=True)
class Rule:
    written: str                # the key as the config writes it
    pattern: re.Pattern[str]    # its regex, the sign taken off
    skip: bool                  # "-:"
    bits: int | None = None
    group_size: int | None = None
    sym: bool | None = None


def _flat(x: Any) -> list[Any]:
    return [y for v in x for y in _flat(v)] if isinstance(x, list) else [x]


def read(quant: dict[str, Any], desc_act: bool, source: str,
         arch: str) -> tuple[tuple[Rule, ...], tuple[str, ...]]:
    """The ``dynamic`` rules and the ``modules_in_block_to_quantize`` names (vLLM's spelling) of
    a GPTQ ``quantization_config``; vLLM's refusal of a rule turning desc_act on with groups."""
    dynamic = quant.get("dynamic") or {}
    if not isinstance(dynamic, dict):
        raise InputError(f"must be an object of regex: overrides, got {clipped(dynamic)}",
                         path=source or None, field="quantization_config.dynamic")
    rules = []
    for key, over in dynamic.items():
        skip = key.startswith("-:")
        pattern = user_regex(key[2:] if skip or key.startswith("+:") else key,
                             f"rule {clipped(key)}", source, "quantization_config.dynamic")
        if skip:
            rules.append(Rule(key, pattern, True))
            continue
        if not isinstance(over, dict):
            raise InputError(f"rule {clipped(key)} must map to an object of overrides, got "
                             f"{clipped(over)}", path=source or None,
                             field="quantization_config.dynamic")
        group = over.get("group_size", quant.get("group_size"))
        if over.get("desc_act", desc_act) and group != -1:
            raise InputError(f"rule {clipped(key)} turns desc_act on with groups of "
                             f"{json.dumps(group)}, and vLLM refuses to build it: "
                             f"\"{DESC_ACT.format(repr(key))}\"", path=source or None,
                             field="quantization_config.dynamic")
        bits, gs, sym = over.get("bits"), over.get("group_size"), over.get("sym")
        rules.append(Rule(key, pattern, False, bits if isinstance(bits, int) else None,
                          gs if isinstance(gs, int) else None,
                          sym if isinstance(sym, bool) else None))
    listed = quant.get("modules_in_block_to_quantize") or []
    if not isinstance(listed, list) or not all(isinstance(b, str) for b in _flat(listed)):
        # (vLLM would test each character of a string, and fail on a number, as a substring)
        raise InputError(f"must be a list (or a list of lists) of module names, got "
                         f"{clipped(listed)}", path=source or None,
                         field="quantization_config.modules_in_block_to_quantize")
    return tuple(rules), tuple(vllm_name(b, arch) for b in _flat(listed))


def module_quant(q: IntQuant, path: str, shards: tuple[str, ...] | None, source: str,
                 experts: bool = False) -> IntQuant | None:
    """The settings vLLM packs the module at `path` with (a fused linear of `shards`; the
    routed `experts`), None where it builds it unquantised; InputError for a list naming some
    of a fused linear's shards, or settings vLLM cannot pack with."""
    if q.blocks and not experts:
        proj = path.split(".")[-1]
        if shards:
            named = [any(b in path.replace(proj, s) for b in q.blocks) for s in shards]
            listed = all_or_none(named, lambda: f"names some but not all shards of {path}",
                                 path, source, "quantization_config.modules_in_block_to_quantize")
        else:
            listed = any(b in path for b in q.blocks)
        if not listed:
            return None
    rule = next((r for r in q.rules if r.pattern.match(path)), None)
    if rule is None:
        return q
    if rule.skip:
        return None
    m = replace(q, bits=q.bits if rule.bits is None else rule.bits,
                group_size=q.group_size if rule.group_size is None else rule.group_size,
                zero_point=q.zero_point if rule.sym is None else rule.sym)
    if (m.bits, m.zero_point) not in ((4, True), (8, True)):
        raise _refuse(rule, path, f"Unsupported quantization config: bits={m.bits}, "
                      f"sym={m.zero_point}", source)
    if m.group_size not in MARLIN_GROUPS:
        raise _refuse(rule, path, f"Marlin does not support group_size = {m.group_size}. Only "
                      f"group_sizes = {list(MARLIN_GROUPS)} are supported.", source)
    return m


def _refuse(rule: Rule, path: str, why: str, source: str) -> InputError:
    return InputError(f"rule {clipped(rule.written)} gives {path} settings vLLM refuses to "
                      f"build: \"{why}\"", path=source or None,
                      field="quantization_config.dynamic")
