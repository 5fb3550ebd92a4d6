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
``1_000``, ``abc``) stay typer's. `tests/test_lean_typer.py` checks that both agree.

It reads typer's private modules (``typer.core.build_runtime_param``, ``typer._coercion``), so
pyproject.toml pins typer to 0.29.x and `tests/test_lean_typer.py` fails when `install()` does
not apply there. On another typer, `install()` does nothing (returns False) and kvcli only
starts slower.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
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


def install() -> bool:
    """Route plain parameters through the fast conversion; True when installed."""
    try:
        from typer import core
        from typer._coercion import RuntimeParam
    except ImportError:
        return False
    original = getattr(core, "build_runtime_param", None)
    if original is None or getattr(original, "_kvcli_lean", False):
        return False

    @dataclass(frozen=True)
    class LeanRuntimeParam(RuntimeParam):
        """Converts the plain values itself; typer's adapter handles the rest."""

        descriptor: Any = None
        fallback: list = field(default_factory=list)   # typer's own, built on first need

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            out = FAST[self.annotation](value)
            if out is not _MISS:
                return out
            if not self.fallback:
                self.fallback.append(original(self.descriptor))
            return self.fallback[0]._coerce_value(value, param=param, ctx=ctx)

    def build_runtime_param(descriptor: Any) -> Any:
        if not _is_plain(descriptor):
            return original(descriptor)
        return LeanRuntimeParam(parameter_info=descriptor.parameter_info,
                                annotation=descriptor.annotation, descriptor=descriptor)

    build_runtime_param._kvcli_lean = True    # type: ignore[attr-defined]
    core.build_runtime_param = build_runtime_param
    return True
