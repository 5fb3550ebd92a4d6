"""The `ray` executor: each job a Ray task (`num_cpus=1`) on a Ray cluster (the `ray` extra).

Where: `address` (`--ray-address`), else `RAY_ADDRESS`, else a local Ray started for the sweep
(`address="local"`: never a cluster some other program left running) and stopped after it.
Each trace is `ray.put` once; every task gets its object reference, never a copy of its own.
At most `jobs` tasks are in flight (default: twice the cluster's CPUs), and the results are
taken as they finish (`ray.wait`). Application errors are not retried (a job that failed once
fails again); Ray retries tasks whose worker died. Ray 2.59+ turns on token authentication for
local clusters: a driver joining a `ray start --head` cluster needs `RAY_AUTH_MODE=token` (and
the head's token) or both sides `disabled` (docs/sweep.md).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import signal
import socket
from collections.abc import Iterator
from typing import Any

from kvcore.errors import InputError
from kvcore.host_memory import check_workers
from kvcore.sweep.executor import ExecutorSettings
from kvcore.sweep.grid import Job
from kvcore.sweep.job import run_job
from kvcore.traces import Trace

_MIN_STORE = 256 * 2**20        # a local cluster's object store: this plus 4x the traces


# A Ray worker process holds more than a local one (Ray's core worker): counted as two
_RAY_WORKER_FACTOR = 2
_REACH_S = 10.0


def _run(trace: Trace, job: Job) -> dict[str, Any]:
    return run_job(job, trace)


def _reach(address: str) -> None:
    """A ``host:port`` address must accept a connection within `_REACH_S` seconds (``auto``,
    ``local`` and ``ray://`` are Ray's to resolve, and fail at once when nothing is there)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address or not host:
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=_REACH_S).close()
    except OSError as err:
        raise InputError(f"cannot reach Ray at {address}: {err.strerror or err} (a cluster's "
                         "head: `ray start --head` prints its address)",
                         field="ray_address") from None


class RayExecutor:
    name = "ray"

    def __init__(self, settings: ExecutorSettings) -> None:
        self.address = settings.address or os.environ.get("RAY_ADDRESS") or None
        self.cap = settings.jobs
        self.started = False        # True: this executor started Ray and stops it
        self.where = ""
        self.pending: dict[Any, Job] = {}
        self.puts = 0               # traces put in the object store (one each)

    def check(self, n_jobs: int) -> None:
        """Before the results file is opened: a cluster's address must answer (`ray.init` on
        an address where nothing listens retried for ever); a local Ray's worker processes,
        one a CPU it is given, must fit this host's memory (`--jobs 100000` passed)."""
        if self.address is not None:
            _reach(self.address)
        else:
            check_workers(min(self.cap or os.cpu_count() or 1, n_jobs) * _RAY_WORKER_FACTOR)

    def describe(self) -> str:
        if not self.where:
            return "ray"
        puts = f"{self.puts} trace{'s' if self.puts != 1 else ''} put in the object store"
        return f"ray: {self.where}; {puts}"

    def _connect(self, store_bytes: int) -> Any:
        import ray

        if ray.is_initialized():    # a caller's own Ray session (a notebook, a test)
            self.where = "the running Ray session"
            return ray
        common: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
        # Ray's core logs a failed token handshake once a second for 20 s before it raises
        os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "error")
        # ray.init puts its own SIGTERM / SIGHUP handlers in (sys.exit(1) or sys.exit(15)):
        # kvcli's (exit 143, "interrupted", the workers ended) go back after it
        saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
        try:
            if self.address is not None:
                ray.init(address=self.address, **common)
                self.where = self.address
            else:
                import kvcore

                root = os.path.dirname(os.path.dirname(os.path.abspath(kvcore.__file__)))
                path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
                ray.init(address="local", num_cpus=self.cap or os.cpu_count() or 1,
                         include_dashboard=False, object_store_memory=store_bytes,
                         runtime_env={"env_vars": {"PYTHONPATH": path}}, **common)
                self.where = "a local Ray started for this sweep"
            self.started = True
        except (RuntimeError, ValueError, OSError) as err:     # (ConnectionError: an OSError)
            if isinstance(err, OSError) and not isinstance(err, ConnectionError):
                # the session folder Ray writes: a full or unwritable /tmp was a traceback
                hint = " (Ray's session folder, under RAY_TMPDIR or /tmp/ray, must be writable)"
            elif self.address is not None:
                hint = (" (a cluster started with `ray start --head` wants the driver to have "
                        "RAY_AUTH_MODE=token since Ray 2.59: docs/sweep.md)")
            else:
                hint = ""
            raise InputError(f"cannot start or reach Ray: {str(err).splitlines()[0]}{hint}",
                             field="ray_address" if self.address else "executor") from None
        finally:
            for sig, handler in saved.items():
                if handler is not None:
                    signal.signal(sig, handler)
        return ray

    def run(self, jobs: list[Job], traces: dict[str, Trace]) -> Iterator[tuple[Job, dict]]:
        if not jobs:
            return
        needed = {j.trace_sha256 for j in jobs}
        sizes = sum(len(pickle.dumps(traces[s], protocol=5)) for s in needed)
        ray = self._connect(_MIN_STORE + 4 * sizes)
        try:
            cpus = int(ray.cluster_resources().get("CPU", 1)) or 1
            cap = self.cap or 2 * cpus
            self.where += f", {cpus} CPUs, {cap} jobs in flight at most"
            refs = {}
            for sha in needed:
                refs[sha] = ray.put(traces[sha])
                self.puts += 1
            task = ray.remote(num_cpus=1, max_retries=3, retry_exceptions=False)(_run)
            todo = iter(jobs)
            while True:
                while len(self.pending) < cap:
                    job = next(todo, None)
                    if job is None:
                        break
                    self.pending[task.remote(refs[job.trace_sha256], job)] = job
                if not self.pending:
                    break
                ready, _ = ray.wait(list(self.pending), num_returns=1)
                for ref in ready:
                    job = self.pending.pop(ref)
                    try:
                        outcome = ray.get(ref)
                    except Exception as err:  # noqa: BLE001 (a worker that died, a lost object)
                        outcome = {"error": f"{type(err).__name__}: {err}",
                                   "input_error": False}
                    yield job, outcome
        finally:
            self.close()

    def close(self) -> None:
        import ray

        pending, self.pending = self.pending, {}
        for ref in pending:
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
        if self.started:
            self.started = False
            with contextlib.suppress(Exception):
                ray.shutdown()
