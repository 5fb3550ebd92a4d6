"""A fused linear (``qkv_proj`` of q/k/v_proj, ``gate_up_proj`` of gate/up_proj, a model's
``packed_modules_mapping``) whose checkpoint shards a quantization_config's list names in
part: vLLM 0.33 builds one linear with one method, so it refuses the model at every TP
(quant_utils.py is_layer_skipped for fp8 and AWQ, gptq_utils.py is_layer_gptq_quantized for
GPTQ's ``modules_in_block_to_quantize``: "Detected some but not all shards ..."; compressed-
tensors' _check_scheme_supported path: "Found different quantization schemes ...").

The one home of that refusal: `kvcore.models.fp8_ignored` (the language model's fp8 ignore
list), `kvcore.models.fp8_vision` (a vision tower's), `kvcore.models.int_quant_rank` (AWQ's
``modules_to_not_convert``, GPTQ's ``modules_in_block_to_quantize``),
`kvcore.models.ct_quant` (the ``ignore`` list) and `kvcore.models.modelopt_rank` (ModelOpt's
``exclude_modules``) decide which shards their list names and call `all_or_none`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from kvcore.errors import InputError

DETECTED = ("Detected some but not all shards of {} are quantized. All shards of fused layers "
            "to have the same precision.")
DIFFERENT = ("Found different quantization schemes for the shards of {}. vLLM requires all to "
             "use the same scheme.")


def all_or_none(named: Sequence[bool], what: Callable[[], str], module: str, source: str,
                field: str, words: str = DETECTED) -> bool:
    """Whether the list names the fused linear's shards (`named`, one a shard): all of them
    or none; InputError saying what the list names (`what()`, worked out only then) and
    vLLM's `words` about `module` where it names some."""
    if all(named) or not any(named):
        return bool(named[0])
    raise InputError(f"{what()}, and vLLM refuses to build it: \"{words.format(module)}\"",
                     path=source or None, field=field)


def named_in_part(written: Mapping[str, str], paths: Sequence[str], named: Sequence[bool],
                  shards: Sequence[str]) -> str:
    """"names X but not Y, shards of one fused linear": the shards' vLLM `paths` the list
    names as the config wrote them (`written`: vLLM's path to the entry; Qwen3.5's checkpoint
    spells ``model.language_model.layers.N``), and those it does not in the same spelling
    (the first named one's, its last part, the shard's name in `shards`, changed)."""
    yes = [written.get(p, p) for p, n in zip(paths, named, strict=True) if n]
    first = next(s for s, n in zip(shards, named, strict=True) if n)
    stem = yes[0][: -len(first)] if yes[0].endswith(first) else ""
    no = [stem + s if stem else p for p, s, n in zip(paths, shards, named, strict=True) if not n]
    return f"names {', '.join(yes)} but not {', '.join(no)}, shards of one fused linear"
