"""The Typer app. Each command lives in `kvcli/commands/<name>.py` and exposes ``register(app)``;
a command only declares typed options and calls one function (see `kvcli.output.run`)."""

from __future__ import annotations

import typer

from kvcli import lean_typer
from kvcli.commands import bench, config, curve, gen, replay, script, stats

lean_typer.install()   # plain option values converted without pydantic (~0.1 s a process)

app = typer.Typer(
    name="kvcli",
    help="Replay LLM request traces through vLLM 0.33's KV cache stack and see what the cache does.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _module in (script, replay, stats, curve, config, gen, bench):
    _module.register(app)


def main() -> None:
    app()
