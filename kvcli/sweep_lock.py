"""`hold_results`: a sweep holds its results file for its whole run, so a second sweep on the
same file is refused before it runs a job (two at once both ran every job: each job twice in
the file, which only a later `sweep report` warned of).

The hold is an exclusive advisory lock (`flock`, not waiting) on a descriptor of its own; the
kernel drops it with the process (SIGKILL included). `kvcli sweep report` only reads and takes
none. A file system that has no `flock` (some NFS) runs the sweep unheld, as before.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator

from kvcore.errors import InputError


@contextlib.contextmanager
def hold_results(path: str) -> Iterator[None]:
    """Hold ``path`` (created when missing) while the block runs; `InputError` (exit 2) when
    another sweep holds it. A file this call created that is still empty when the block ends
    in an exception (a refusal before any job finished) is removed, held, before its release.
    """
    created = not os.path.exists(path)
    fd = _lock(path)
    try:
        yield
    except BaseException:
        if created:
            with contextlib.suppress(OSError):
                st = os.stat(path)
                if os.path.samestat(st, os.fstat(fd)) and st.st_size == 0:
                    os.remove(os.path.realpath(path))
        raise
    finally:
        os.close(fd)


def _lock(path: str) -> int:
    for _ in range(100):
        try:
            # (O_NONBLOCK: a FIFO given as the results does not block here)
            fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_NONBLOCK, 0o666)
        except OSError as err:
            raise InputError(f"cannot write {path}: {err.strerror}", field="results") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise InputError("another kvcli sweep is writing it (this sweep would run its jobs "
                             "again): wait for it to end, then --resume; or give another "
                             "results file", path=path) from None
        except OSError:
            return fd           # no flock here: unheld
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except OSError:
            same = False
        if same:
            return fd
        # (a sweep that had created it gave up and removed it between our open and our lock:
        # this descriptor is of a file no longer there)
        os.close(fd)
    raise InputError("removed and made again while this sweep opened it: is another program "
                     "writing it?", path=path)
