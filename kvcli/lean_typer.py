"""Plain option values without importing pydantic: a start-up shortcut for every command.

Typer 0.29 coerces each parameter through a pydantic ``TypeAdapter`` (it requires pydantic);
importing pydantic and building the adapters costs every process 0.09-0.13 s on a 2-core
machine, a third of a short command's whole run (medians of 10 interleaved runs, idle:
``kvcli config --list`` 0.16 s with this, 0.24 s without; ``kvcli curve
traces/multiturn-chat.jsonl --json`` 0.22 s against 0.31 s), and about 0.5 s when the machine
is loaded. `install()` puts a thin layer in front of typer's ``build_runtime_param``: a ``str``,
``int`` or ``float`` option without constraints (no min/max, parser or file type) whose value is
already of that type, or a string in the plain form (``12``, ``-3``, ``0.5``, ``1e3``), is
converted here with Python's ``int``/``float``; every other value and every other annotation
goes to typer's own adapter, built on first use, so messages and edge cases (``007``,
``1_000``, ``abc``) stay typer's. Choices (an ``Enum`` annotation) and paths (``pathlib.Path``)
go through the very functions typer's adapters wrap (``typer._param_types.coerce_cli_choice``
and ``coerce_cli_path``, which need no pydantic), called here with the context and parameter
the adapter would hand them; a value they refuse goes to typer's adapter, which words the error.
`tests/test_lean_typer.py` checks that both agree. Every integer option, converted here or by
typer, is refused at 2**63 or beyond (`INT64`). (Without this, the replay's choice options
alone made every `kvcli replay` import pydantic: 0.1 s of a 1.25 s run of the 2,000-request
`benchmarks/sched_vs_vllm.py` trace.)

It reads typer's private modules (``typer.core.build_runtime_param``, ``typer._coercion``), so
pyproject.toml pins typer to 0.29.x and `tests/test_lean_typer.py` fails when `install()` does
not apply there. On another typer, `install()` does nothing (returns False) and kvcli only
starts slower.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

_MISS = object()
_INT = re.compile(r"[+-]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _to_str(v: Any) -> Any:
    return v if type(v) is str else _MISS


def _to_int(v: Any) -> Any:
    if type(v) is int:
        return v
    if type(v) is str and _INT.fullmatch(v):
        return int(v)
    return _MISS


def _to_float(v: Any) -> Any:
    if type(v) is float:
        return v
    if type(v) is str and _FLOAT.fullmatch(v):
        return float(v)
    return _MISS


def _to_bool(v: Any) -> Any:
    return v if type(v) is bool else _MISS


FAST = {str: _to_str, int: _to_int, float: _to_float, bool: _to_bool}


def _is_plain(descriptor: Any) -> bool:
    info = descriptor.parameter_info
    return (descriptor.annotation in FAST and descriptor.file_annotation is None
            and getattr(info, "parser", None) is None and getattr(info, "min", None) is None
            and getattr(info, "max", None) is None)


def _converter(descriptor: Any) -> Callable[[Any, Any, Any], Any] | None:
    """``(value, param, ctx) -> converted value or _MISS`` for a parameter this module
    converts itself; None for the others (typer's adapter, as built by typer)."""
    if _is_plain(descriptor):
        fast = FAST[descriptor.annotation]
        return lambda value, param, ctx: fast(value)
    ann = descriptor.annotation
    info = descriptor.parameter_info
    if descriptor.file_annotation is not None or getattr(info, "parser", None) is not None:
        return None
    try:
        from typer._param_types import coerce_cli_choice, coerce_cli_path, routes_to_path
    except ImportError:
        return None
    if isinstance(ann, type) and issubclass(ann, Enum):
        choices = list(ann)
        case_sensitive = info.case_sensitive

        def choice(value: Any, param: Any, ctx: Any) -> Any:
            try:
                return coerce_cli_choice(value, choices=choices, case_sensitive=case_sensitive,
                                         ctx=ctx)
            except ValueError:
                return _MISS

        return choice
    if ann is Path and routes_to_path(ann, info):
        path_type = info.path_type if info.path_type is not None else Path

        def path(value: Any, param: Any, ctx: Any) -> Any:
            # A string becomes the path type here (pydantic's lax str -> Path is the type's
            # constructor: tests compare); then typer's checks (a refusal raises typer's own
            # BadParameter, as under its adapter).
            if type(value) is str:
                value = path_type(value)
            elif not isinstance(value, path_type):
                return _MISS
            return coerce_cli_path(value, info, path_type=path_type, param=param, ctx=ctx)

        return path
    return None


INT64 = 1 << 63


def _none(value: Any, param: Any, ctx: Any) -> Any:
    return _MISS


def _int_like(ann: Any) -> bool:
    """``int``, or a union holding it (``int | None``)."""
    return ann is int or int in getattr(ann, "__args__", ())


def install() -> bool:
    """Route plain parameters through the fast conversion; True when installed."""
    try:
        from typer import core
        from typer._coercion import RuntimeParam
    except ImportError:
        return False
    # (Any: mypy carries the None check below into functions, not into the class's method)
    original: Any = getattr(core, "build_runtime_param", None)
    if original is None or getattr(original, "_kvcli_lean", False):
        return False

    @dataclass(frozen=True)
    class LeanRuntimeParam(RuntimeParam):
        """Converts the plain values itself; typer's adapter handles the rest."""

        descriptor: Any = None
        convert: Any = None
        fallback: list = field(default_factory=list)   # typer's own, built on first need

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            out = self.convert(value, param, ctx)
            if out is _MISS:
                if not self.fallback:
                    self.fallback.append(original(self.descriptor))
                out = self.fallback[0]._coerce_value(value, param=param, ctx=ctx)
            if type(out) is int and not -INT64 <= out < INT64:
                # 2**64 was taken, run, and then crashed the JSON writer (orjson keeps 64
                # bits); no count, size or seed of kvcli's is near it
                from typer._click.exceptions import BadParameter

                from kvcore.errors import clipped_int

                # (clipped: 4,300 digits made a 4.4 KB error line)
                raise BadParameter("must be a 64-bit integer (below 2**63 in size), got "
                                   f"{clipped_int(out)}", ctx=ctx, param=param)
            return out

    def build_runtime_param(descriptor: Any) -> Any:
        convert = _converter(descriptor)
        if convert is None and _int_like(descriptor.annotation):
            convert = _none        # typer's adapter converts; the range is checked above
        if convert is None:
            return original(descriptor)
        return LeanRuntimeParam(parameter_info=descriptor.parameter_info,
                                annotation=descriptor.annotation, descriptor=descriptor,
                                convert=convert)

    build_runtime_param._kvcli_lean = True    # type: ignore[attr-defined]
    core.build_runtime_param = build_runtime_param
    return True
