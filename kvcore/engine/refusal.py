"""Where a refused option is said: on the trace's config line when that line set it (and no
flag did), else as the option (`option --x-y: ...`). One rule for every start-up refusal, and
for the warnings: an option the line set is marked with that line, ``FILE:LINE``, and named as
the line spells it (`where_set`, `named`)."""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from kvcore.engine.options import ReplayOptions
from kvcore.engine.spec_config import at_json_key, json_field
from kvcore.errors import InputError
from kvcore.traces import Trace


def _lined(trace: Trace | None) -> dict[str, str]:
    """The options the trace's config line set: kvcli's name -> the line's spelling (it may use
    vLLM's, num_gpu_blocks_override for num_blocks: `resolve` reads both)."""
    return {} if trace is None else trace.config_keys


def refusal(cfg: ReplayOptions, trace: Trace | None, name: str, message: str,
            also: tuple[str, ...] = ()) -> InputError:
    """The error refusing option `name` (raise it): ``FILE:LINE: field 'config.NAME'`` when the
    trace's config line gave the value, else the option's. ``also``: the other options of a
    refused pair (a budget below max_num_seqs): the first of them a flag set, else one the
    config line set, is named when `name` was neither (a config line's max_num_seqs 4096
    was blamed on --max-num-batched-tokens, which nobody gave)."""
    names = (name, *also)
    given: AbstractSet[str] = cfg.given or set()
    lined = _lined(trace)

    def about(blamed: str) -> str:
        # (blamed on the other option, the message says whose value it starts with: "option
        # --max-num-seqs: 2048 is below max_num_seqs 4096" did not say what the 2048 was)
        return message if blamed == name else f"{name} {message}"

    flag = next((n for n in names if n in given), None)
    if flag is not None:
        return InputError(about(flag), field=json_field(flag, cfg.spec_json))
    line = next((n for n in names if n in lined), None)
    if trace is not None and line is not None:
        return InputError(about(line), path=trace.label, line=trace.config_line,
                          field=f"config.{lined[line]}")
    return InputError(message, field=name)


def said_where_set(cfg: ReplayOptions, trace: Trace | None, err: InputError) -> InputError:
    """``err``, an option's refusal from a layer that knows no trace (the sizing layer, the CPU
    tier's checks), named on the trace's config line when that line set the option and no flag
    did (`refusal`'s rule), at its key when `--speculative-config`'s JSON gave it; else
    ``err`` itself, as raised."""
    if err.path is None and err.field in cfg.spec_json:
        return at_json_key(err, cfg.spec_json)
    if err.path is not None or err.field is None or err.field in (cfg.given or ()):
        return err
    lined = _lined(trace)
    if trace is None or err.field not in lined:
        return err
    return InputError(err.message, path=trace.label, line=trace.config_line,
                      field=f"config.{lined[err.field]}", remedy=err.remedy)


def where_set(cfg: ReplayOptions, trace: Trace | None, name: str) -> str:
    """`` (the trace's config line, FILE:LINE)`` when that line set option `name` (in either
    spelling) and no flag did, else ``""``: a warning's mark after the option, so that the user
    looks for it in the file, at the line, not among the flags (`refusal`'s rule)."""
    if trace is None or name in (cfg.given or ()) or name not in trace.config_keys:
        return ""
    return f" (the trace's config line, {trace.label}:{trace.config_line})"


def named(keys: list[str], trace: Trace, cfg: ReplayOptions) -> str:
    """The options `keys` (kvcli's names) for a warning, those the trace's config line set (no
    flag) apart, as the line spells them, and marked with the line ("a; b, c (the trace's
    config line, t.jsonl:1)")."""
    written = trace.config_keys
    lined = [k for k in keys if where_set(cfg, trace, k)]
    flags = ", ".join(k for k in keys if k not in lined)
    if not lined:
        return flags
    return (f"{flags + '; ' if flags else ''}{', '.join(written[k] for k in lined)}"
            f"{where_set(cfg, trace, lined[0])}")


# The CPU tier's size options, the first given naming its refusals (the chunks before bytes).
TIER_SIZE_KEYS = ("kv_offloading_size_chunks", "kv_offloading_size")


def tier_option(cfg: ReplayOptions, trace: Trace) -> str:
    """The option that turned the CPU tier on, the one its refusals name: a flag first, else
    the trace's config line's key, else kv_offloading_size."""
    for k in TIER_SIZE_KEYS:
        if k in (cfg.given or ()):
            return k
    for k in TIER_SIZE_KEYS:
        if k in trace.config_keys:
            return k
    return "kv_offloading_size"
