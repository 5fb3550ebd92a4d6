"""The seam every executor sits behind, and the registry by name (`--executor NAME`).

An executor runs jobs and yields `(job, outcome)` pairs as they finish, in any order (the
caller records each at once and sorts at the end). It is given the traces once, by sha256, and
sends each to a worker once, never once a job. `close()` ends its workers (Ctrl-C included)
and is safe to call twice. A new executor is a module with a class keeping this contract and
one line in `EXECUTORS`.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from kvcore.errors import InputError, clipped
from kvcore.sweep.grid import Job
from kvcore.traces import Trace


@dataclass(frozen=True, slots=True)
class ExecutorSettings:
    jobs: int | None = None             # local: worker processes; ray: jobs in flight at most
    address: str | None = None          # ray: a cluster's address (None: RAY_ADDRESS, or local)


class Executor(Protocol):
    """The contract in the module docstring: made from an `ExecutorSettings`, ``name`` its
    `--executor` name."""

    name: str

    def describe(self) -> str:
        """One line for a person: where the jobs run."""
        ...

    def check(self, n_jobs: int) -> None:
        """Raise `InputError` when this executor cannot start what `n_jobs` jobs take here
        (`run` checks too; a caller with an output to open calls it first)."""
        ...

    def run(self, jobs: list[Job], traces: dict[str, Trace]) -> Iterator[tuple[Job, dict[str,
                                                                                       Any]]]:
        """Run `jobs` (each reads `traces[job.trace_sha256]`); yield each with its outcome
        (`kvcore.sweep.job.run_job`'s) as it finishes."""
        ...

    def close(self) -> None:
        """End the workers (after Ctrl-C too); safe to call twice."""
        ...


# name -> (module, class, the package it needs, the install command)
EXECUTORS: dict[str, tuple[str, str, str | None, str | None]] = {
    "local": ("kvcore.sweep.executor_local", "LocalExecutor", None, None),
    "ray": ("kvcore.sweep.executor_ray", "RayExecutor", "ray", "pip install 'kvcli[ray]'"),
}


def check_executor(name: str) -> None:
    """Refuse, before any work, an unknown executor or one whose package is missing."""
    if name not in EXECUTORS:
        raise InputError(f"unknown executor {clipped(name)}; known: {', '.join(EXECUTORS)}",
                         field="executor")
    _, _, package, install = EXECUTORS[name]
    if package is not None and importlib.util.find_spec(package) is None:
        raise InputError(f"the {name} executor needs {package}, which is not installed: "
                         f"{install}", field="executor")


def make_executor(name: str, settings: ExecutorSettings) -> Executor:
    check_executor(name)
    module, cls, _, _ = EXECUTORS[name]
    return getattr(importlib.import_module(module), cls)(settings)
