"""The parameters a command line gave itself (not a default, not the environment): what the
warnings about options that changed nothing name (`kvcli config`, `cluster --list-routers`)
and the refusals of options a `kvcli gen` kind does not read.
Read through click's `ParameterSource`, a private part of the pinned typer."""

from __future__ import annotations

from typing import Any


def given_params(ctx: Any) -> list[Any]:
    """The command's parameters (click's) that `ctx`'s command line set, in declared order."""
    from typer._click.core import ParameterSource

    return [p for p in ctx.command.params if p.name is not None
            and ctx.get_parameter_source(p.name) == ParameterSource.COMMANDLINE]
