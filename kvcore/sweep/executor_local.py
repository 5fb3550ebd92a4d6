"""The `local` executor: a pool of worker processes on this machine's cores (stdlib only).

Workers are started with `spawn` (a clean interpreter: no locks or threads inherited from the
command) and each reads the traces once, when it starts, from a file the command wrote (removed
at the end; a sweep killed before that leaves it, and the next sweep removes it: a live sweep
holds a lock on its file, which the kernel drops with the process); a job then carries only its
options. Workers ignore Ctrl-C (the command handles it and ends them) and, on Linux, die with
the command (`PR_SET_PDEATHSIG`), so a killed sweep leaves no replay running. A worker that dies
(the OOM killer) breaks the pool with every job in flight: a new pool runs them again one at a
time, and a job whose worker dies while it runs alone more than `MAX_LOST` times fails alone (it
was a `BrokenProcessPool` traceback that ended the sweep, its queued jobs never run).
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import multiprocessing
import os
import pickle
import signal
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from kvcore.errors import InputError
from kvcore.host_memory import check_workers
from kvcore.interrupts import deferred
from kvcore.sweep.executor import ExecutorSettings
from kvcore.sweep.grid import Job
from kvcore.sweep.job import run_job
from kvcore.traces import Trace
from kvcore.worker_start import starting_workers

_TRACES: dict[str, Trace] = {}      # in a worker: the traces, by sha256
MAX_LOST = 3        # deaths of a job's worker while it runs alone before the job fails
_PREFIX = "kvcli-sweep-"


def _write_traces(traces: dict[str, Trace]) -> tuple[str, int]:
    """The workers' traces file: (its path, a descriptor holding a shared lock on it, which
    says the file is in use until the command closes it or dies). No usable temporary folder,
    or one that cannot take the file (full), is an `InputError` naming it (exit 2: no job has
    run yet), and a file written in part is removed (it was an OSError traceback)."""
    try:
        _remove_stale()
        fd, path = tempfile.mkstemp(prefix=_PREFIX, suffix=".traces")
    except OSError as err:
        raise _temp_error(err) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        with open(fd, "wb", closefd=False) as f:
            pickle.dump(traces, f, protocol=5)
    except BaseException as err:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.remove(path)
        if isinstance(err, OSError):
            raise _temp_error(err) from None
        raise
    return path, fd


def _temp_error(err: OSError) -> InputError:
    try:
        folder = tempfile.gettempdir()
    except OSError:     # ("No usable temporary directory found in [...]": the folders tried)
        return InputError(f"no usable temporary folder for the workers' traces file "
                          f"({err.strerror}): set TMPDIR to a writable folder")
    return InputError(f"cannot write the workers' traces file in this temporary folder: "
                      f"{err.strerror or err} (set TMPDIR to a folder with room)", path=folder)


def _remove_stale(min_age_s: float = 60.0) -> None:
    """Remove the traces files of sweeps that died without their cleanup (a SIGKILL left one
    in the temp folder each): no lock on it, and older than `min_age_s` (a file just made,
    not yet locked, stays)."""
    for path in glob.glob(os.path.join(tempfile.gettempdir(), _PREFIX + "*.traces")):
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)     # OSError: a live sweep's
            if time.time() - os.fstat(fd).st_mtime > min_age_s:
                os.remove(path)
        except OSError:
            pass
        finally:
            os.close(fd)


def _init(traces_file: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(Exception):        # Linux: end with the parent
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    with open(traces_file, "rb") as f:
        _TRACES.update(pickle.load(f))


def _work(job: Job) -> dict[str, Any]:
    return run_job(job, _TRACES[job.trace_sha256])


class LocalExecutor:
    name = "local"

    def __init__(self, settings: ExecutorSettings) -> None:
        self.workers = settings.jobs or os.cpu_count() or 1
        self.started = 0            # worker processes the last run started (one a job at most)
        self.pool: ProcessPoolExecutor | None = None

    def describe(self) -> str:
        # what ran, not what was asked: --jobs 100000 on 2 jobs starts 2 processes
        n = self.started or self.workers
        return f"local: {n} worker process{'es' if n != 1 else ''}"

    def check(self, n_jobs: int) -> None:
        """The worker processes `n_jobs` start (at most one a job) fit the host's memory."""
        check_workers(min(self.workers, n_jobs))

    def run(self, jobs: list[Job], traces: dict[str, Trace]) -> Iterator[tuple[Job, dict]]:
        if not jobs:
            return
        needed = {j.trace_sha256 for j in jobs}
        self.check(len(jobs))
        workers = self.started = min(self.workers, len(jobs))
        # The traces reach the workers through a file, not the start-up pipe: a worker that
        # died before reading them all left the command blocked in that pipe's write, deaf to
        # Ctrl-C (a replacement pool after a worker's death made that likely)
        mine, lock = _write_traces({k: v for k, v in traces.items() if k in needed})
        died: dict[int, int] = {}       # job index -> its worker's deaths while it ran alone
        try:
            self._start(workers, mine)
            # at most two jobs a worker queued: a Ctrl-C cancels the rest at once
            pending: dict[Future, Job] = {}
            todo = iter(jobs)
            suspects: list[Job] = []    # jobs a broken pool took with it: run again one at a time
            solo: Job | None = None     # the suspect running alone: a death then is its own
            while True:
                broken = False
                if solo is None and suspects and not pending:
                    solo = suspects.pop(0)
                    broken = not self._put(pending, solo)
                while solo is None and not suspects and not broken \
                        and len(pending) < 2 * workers:
                    job = next(todo, None)
                    if job is None:
                        break
                    if not self._put(pending, job):
                        suspects.append(job)
                        broken = True
                if not pending and not broken:
                    break
                if not broken:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        job = pending.pop(fut)
                        try:
                            outcome = fut.result()
                        except BrokenProcessPool:
                            broken = True
                            if job is not solo:
                                suspects.append(job)
                            continue
                        if job is solo:
                            solo = None
                        yield job, outcome
                if broken:
                    # A worker died (the OOM killer, a signal): the pool is gone with every
                    # job in it. A new pool runs them again one at a time, as Ray retries a
                    # dead worker's task; a job whose worker dies while it runs alone more
                    # than MAX_LOST times fails (the jobs beside it are not blamed).
                    suspects += [j for j in pending.values() if j is not solo]
                    pending.clear()
                    self.close()
                    if solo is not None:
                        died[solo.index] = died.get(solo.index, 0) + 1
                        if died[solo.index] > MAX_LOST:
                            yield solo, {"error": f"its worker process died {MAX_LOST + 1} "
                                         "times (out of memory? killed?)",
                                         "input_error": False}
                        else:
                            suspects.insert(0, solo)
                        solo = None
                    self._start(workers, mine)
            pool, self.pool = self.pool, None
            assert pool is not None
            pool.shutdown(wait=True)
        finally:
            self.close()
            with contextlib.suppress(OSError):
                os.remove(mine)
            os.close(lock)

    def _put(self, pending: dict[Future, Job], job: Job) -> bool:
        """Submit ``job`` into ``pending``; False when the pool broke (a worker died)."""
        try:
            pending[self._submit(job)] = job
        except BrokenProcessPool:
            return False
        return True

    def _start(self, workers: int, traces: str) -> None:
        with starting_workers(workers):      # (its locks start the resource tracker)
            self.pool = ProcessPoolExecutor(
                workers, mp_context=multiprocessing.get_context("spawn"), initializer=_init,
                initargs=(traces,))

    def _submit(self, job: Job) -> Future:
        """Submit with Ctrl-C held: a submit may start a worker, writing it the traces through
        a pipe; a Ctrl-C inside that write closed the pipe mid-pickle (the worker printed an
        UnpicklingError traceback) before the pool knew the process (`close` could not end
        it). Held, it lands once the worker is the pool's; the hold is one process start."""
        assert self.pool is not None
        with deferred(), starting_workers(self.started):
            return self.pool.submit(_work, job)

    def close(self) -> None:
        pool, self.pool = self.pool, None
        if pool is None:
            return
        procs = list(getattr(pool, "_processes", {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for p in procs:             # a job in flight is abandoned, not waited for
            with contextlib.suppress(Exception):
                if p.is_alive():
                    p.terminate()
        for p in procs:
            with contextlib.suppress(Exception):
                p.join(5)
        # The pool's manager thread closes its wake-up pipe as it ends; if the interpreter
        # exits meanwhile, 3.11's exit hook can write to that pipe as it closes ("Exception
        # ignored ... OSError: Bad file descriptor" after a Ctrl-C). Its end is bounded: its
        # workers are gone.
        manager = getattr(pool, "_executor_manager_thread", None)
        if manager is not None:
            with contextlib.suppress(Exception):
                manager.join(5)
