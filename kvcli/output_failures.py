"""How a command's failures end: one line on stderr and an exit code (`run`), an input error's
line naming the file, line and field or the option as typed (`describe`, `flag`)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from typing import Any

import typer

from kvcli import closed_streams
from kvcli.output_files import STDOUT_LABEL, OutputFailed
from kvcli.output_terminal import stderr_console
from kvcli.signals import interrupt_code
from kvcore.engine.progress_watch import NoProgress
from kvcore.errors import InputError, NoDeviceError, printable

# Fields whose option is not their name in kebab case (the CPU tier's: vLLM's and the issue's
# spelling on the command line, the oracle's in a trace's config line).
FLAGS = {"offload_block_size": "kv-offloading-block-size",
         "disable_hybrid": "disable-hybrid-kv-cache-manager",
         "eviction_policy": "offload-eviction-policy",
         "store_threshold": "offload-store-threshold",
         "sync_load_budget_bytes": "offload-sync-load-budget-bytes",
         "load_steps": "offload-load-steps", "store_steps": "offload-store-steps"}


# Fields a message names by another of their options: replay's `tp` by vLLM's spelling, as
# `kvcli config` names its tensor-parallel size.
NAMED_AS = {"tp": "tensor_parallel_size"}


# Fields that a command takes as a positional argument, not an option: its metavar.
ARGUMENTS = {"endpoint": "ENDPOINT", "spec": "SPEC", "model_argument": "MODEL",
             "op_script": "OPS"}


def flag(field: str) -> str:
    """The option of a field: ``--kebab-case`` (or its `FLAGS` spelling)."""
    return "--" + FLAGS.get(field, field.replace("_", "-"))


def describe(err: InputError) -> str:
    """One line for an input error: ``file:line: field 'x': ...`` for a file's problem (as
    `InputError` words it), ``option --x-y: ...`` for an option's (a field without a file;
    ``argument ENDPOINT: ...`` for a positional one);
    a remedy names its flag: ``(--skip-bad skips such requests)``."""
    if err.remedy:
        name, does = err.remedy
        err = InputError(f"{err.message} ({flag(name)} {does})", path=err.path,
                         line=err.line, field=err.field)
    if err.field and err.path is None and err.line is None:
        if err.field in ARGUMENTS:
            return f"argument {ARGUMENTS[err.field]}: {err.message}"
        option, _, key = err.field.partition(".")     # (a key of a JSON option's value)
        named = flag(NAMED_AS.get(option, option)) + ("'s " + key if key else "")
        return f"option {named}: {err.message}"
    return str(err)


# Requests hold their tokens while they run or wait preempted, as vLLM's do: what a trace's
# requests hold at once is known only as they run (six requests of 10,000,000 output tokens,
# --no-async-scheduling, under ulimit -v 2500000: a MemoryError traceback after 60 s)
OUT_OF_MEMORY = ("error: out of memory: the run needed more host memory than this process may "
                 "take (the machine's, or a ulimit -v): fewer or shorter requests, or a smaller "
                 "pool, fit")


def run(fn: Callable[[], Any]) -> Any:
    """Call a command's one function, turning known failures into one line and an exit code.

    InputError -> 2 (an output that cannot be written included, checked before the work),
    OutputFailed (a full disk, on a file or stdout), MemoryError (the host's memory, or a
    ulimit -v, spent while the work ran) and NoProgress (a replay stuck in a loop) -> 1, NoDeviceError -> 3, Ctrl-C -> 130,
    SIGTERM -> 143, SIGHUP -> 129 (128 + the signal, the shell's convention; see
    `install_signal_handlers`); anything else is a bug and keeps its traceback.
    """
    try:
        return fn()
    except OutputFailed as err:
        # (one line: a newline in an output's path, named in the message, is escaped)
        stderr_console().print(printable(f"error: {err}"), markup=False, highlight=False)
        if err.where == STDOUT_LABEL:
            _silence_stdout()
        raise typer.Exit(1) from None
    except InputError as err:
        stderr_console().print(printable(f"error: {describe(err)}"), markup=False,
                               highlight=False)
        raise typer.Exit(2) from None
    except NoProgress as err:
        # (a loop vLLM spins in too, or a kvcli bug: either way one line, the step and the
        # running requests' state in it, not a traceback; exit 1, a run that could not end)
        stderr_console().print(printable(f"error: {err}"), markup=False, highlight=False)
        raise typer.Exit(1) from None
    except NoDeviceError as err:
        stderr_console().print(f"error: {err}", markup=False, highlight=False)
        raise typer.Exit(3) from None
    except MemoryError:
        # (what the run held is released by now: the frames that held it have unwound)
        stderr_console().print(OUT_OF_MEMORY, markup=False, highlight=False)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        stderr_console().print("interrupted", markup=False)
        raise typer.Exit(interrupt_code()) from None
    except BrokenPipeError:
        # `kvcli ... | head`: the reader left; not an error worth a traceback.
        _silence_stdout()
        raise typer.Exit(0) from None


def run_printing(fn: Callable[[], Any], *, then_exit: bool = True) -> Any:
    """`run` for what writes stdout itself (`--help`, `--version`): a full disk is one line and
    exit 1, a reader that left exit 0 (they ended in a traceback); with ``then_exit`` False, a
    reader that left returns None and the caller ends as it would (the help that `kvcli` with
    no command prints is still a usage error, exit 2)."""
    def guarded() -> Any:
        try:
            return fn()
        except BrokenPipeError:
            if then_exit:
                raise
            _silence_stdout()
            return None
        except OSError as err:
            raise OutputFailed(STDOUT_LABEL, err) from None

    return run(guarded)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush does not raise again."""
    if closed_streams.silence(sys.stdout):
        return
    with contextlib.suppress(Exception):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
