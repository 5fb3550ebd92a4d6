"""The Typer app. Each command lives in `kvcli/commands/<name>.py` and exposes ``register(app)``;
a command only declares typed options and calls one function (see `kvcli.output.run`)."""

from __future__ import annotations

from typing import Annotated

import typer

from kvcli import help_layout, lean_typer
from kvcli.commands import (
    bench,
    calibrate,
    clock,
    cluster,
    config,
    curve,
    events,
    gen,
    replay,
    script,
    stats,
    sweep,
)

lean_typer.install()   # plain option values converted without pydantic (~0.1 s a process)
help_layout.install()  # option names whole in --help at any width

VLLM_MODELLED = "0.33.0"

app = typer.Typer(
    name="kvcli",
    help="Replay LLM request traces through vLLM 0.33's KV cache stack and see what the cache does.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},   # inherited by every command
)


def version_line() -> str:
    """``kvcli 0.1.0 (vLLM 0.33.0 modelled, Python 3.11.9)``."""
    import platform
    from importlib import metadata

    try:
        mine = metadata.version("kvcli")
    except metadata.PackageNotFoundError:
        mine = "unknown"
    return f"kvcli {mine} (vLLM {VLLM_MODELLED} modelled, Python {platform.python_version()})"


def _print_version(value: bool) -> None:
    if value:
        from kvcli.output import View, emit, run_printing

        run_printing(lambda: emit(View({"version": version_line()}, text=[version_line()]),
                                  as_json=False))
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_print_version, expose_value=True,
        help="Print kvcli's version, the vLLM version it models and Python's, and exit.")]
    = False,
) -> None:
    """Replay LLM request traces through vLLM 0.33's KV cache stack and see what the cache does."""

for _module in (script, replay, cluster, sweep, stats, curve, config, gen, bench, clock,
                calibrate, events):
    _module.register(app)


def main() -> None:
    import sys

    # typer 0.29's own click (typer is pinned, see pyproject.toml and kvcli/lean_typer.py)
    from typer._click import exceptions as usage

    from kvcli.closed_streams import stand_in
    from kvcli.output import install_signal_handlers
    from kvcli.output_terminal import clamp_columns, tolerant
    from kvcli.usage_errors import close_options, command_words, usage_line
    from kvcore.gc_pause import one_shot_process

    stand_in()                  # a stream the shell closed fails in one line, not a traceback
    tolerant()                  # PYTHONIOENCODING=ascii: '…' is written as an escape, no traceback
    clamp_columns()             # COLUMNS=1 cut every table cell to one character
    install_signal_handlers()   # SIGTERM / SIGHUP stop a command as Ctrl-C does
    one_shot_process()          # the process ends after this command (kvcore/gc_pause.py)
    from kvcli.dotted_options import join_dotted

    sys.argv[1:] = join_dotted(sys.argv[1:])    # vLLM's --limit-mm-per-prompt.image 0
    registered = app.registered_commands, app.registered_groups
    only_the_command_named(sys.argv[1:])
    try:
        code = app(standalone_mode=False)
        # Without standalone mode typer returns a command's exit code instead of exiting.
        sys.exit(code if isinstance(code, int) else 0)
    except usage.NoArgsIsHelpError as err:
        err.show()
        sys.exit(err.exit_code)
    except usage.UsageError as err:
        # A bad option or argument is one line, exit 2, as every other input error is (typer
        # would draw a usage box); -h shows the usage.
        words = command_words(err.ctx, sys.argv[1:], app)
        if isinstance(err, usage.NoSuchOption):
            err.possibilities = close_options(err.option_name, err.possibilities)
        print(f"error: {usage_line(err.format_message())} ({' '.join(['kvcli', *words])} -h "
              "for help)", file=sys.stderr)
        sys.exit(2)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        print("Aborted.", file=sys.stderr)
        sys.exit(130)
    finally:
        app.registered_commands, app.registered_groups = registered


def only_the_command_named(argv: list[str]) -> None:
    """Where the first word names a command (or a group) exactly, typer builds only that one:
    it builds every command's click object from their signatures before it reads the command
    line. CPU time, compiled build, medians of 10 interleaved runs: `kvcli replay
    traces/multiturn-chat.jsonl --json` 0.92x (-17 ms), `kvcli config --list` 0.86x. Anything
    else (an option first, a typo, no word) sees them all, as typer would."""
    word = argv[0] if argv else ""
    commands = [c for c in app.registered_commands if c.name == word]
    groups = [g for g in app.registered_groups if g.name == word]
    if commands or groups:
        app.registered_commands, app.registered_groups = commands, groups

