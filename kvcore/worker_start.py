"""`starting_workers`: worker processes the system refuses to start, as one line naming the
option that asked for them.

`kvcli sweep` and `kvcli curve --jobs` start worker processes (a process pool, its resource
tracker); where this user's process limit (``ulimit -u``) or the kernel's memory is spent, the
start fails with an OSError ('Resource temporarily unavailable', EAGAIN), which ended the
command in a traceback (a sweep's before its first job ran). The memory the workers need is
checked before (`host_memory.check_workers`); the process limit cannot be read as a count of
what is free, so the start itself is the check.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kvcore.errors import InputError


@contextmanager
def starting_workers(n: int, field: str = "jobs") -> Iterator[None]:
    """Turn an OSError raised while `n` worker processes start into an `InputError` naming
    `field` (the option that set how many)."""
    try:
        yield
    except OSError as err:
        es = "es" if n != 1 else ""
        raise InputError(f"cannot start {n:,} worker process{es}: {err.strerror or err} (the "
                         "process limit, ulimit -u, or the machine's memory): fewer start "
                         "with a smaller value", field=field) from None
