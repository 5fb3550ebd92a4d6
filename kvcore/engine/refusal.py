"""Where a refused option is said: on the trace's config line when that line set it (and no
flag did), else as the option (`option --x-y: ...`). One rule for every start-up refusal."""

from __future__ import annotations

from kvcore.engine.options import ReplayOptions
from kvcore.errors import InputError
from kvcore.traces import Trace


def refusal(cfg: ReplayOptions, trace: Trace | None, name: str, message: str) -> InputError:
    """The error refusing option `name` (raise it): ``FILE:LINE: field 'config.NAME'`` when the
    trace's config line gave the value, else the option's."""
    if trace is not None and name in trace.config and name not in (cfg.given or ()):
        return InputError(message, path=trace.path, line=trace.config_line,
                          field=f"config.{name}")
    return InputError(message, field=name)
