"""Whether the files a run keeps open at once fit this process's open-file limit
(``RLIMIT_NOFILE``), checked before anything is opened.

`kvcli cluster --events DIR` keeps two streams a replica open, every router's, until the run
ends (so that a failed run renames none into place); live publishers hold what
`kvcore.live.options.rank_footprint` counts (measured: 2 to 6 files a rank, by endpoint). Past
the limit the open failed part-way through the build ("Too many open files" at replica 1,497
of 2,000 under ``ulimit -n 3000``), or in a second router's build after the first router had
run whole. The soft limit is raised first, as far as the run needs and the hard
limit allows (as a user may with ``ulimit -n``, and as many tools do on their own); only a run
past the hard limit is refused.
"""

from __future__ import annotations

import os

from kvcore.errors import InputError

# Files a run opens besides those counted: the trace read as a stream (gzip's too), a model
# config or calibration file at start-up, imports, the metrics endpoint's connections, a
# subscriber's connection to a publisher; all short-lived or few.
HEADROOM = 32


def open_now() -> int:
    """Files this process has open now (0 where no listing of them can be read)."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            return max(len(os.listdir(folder)) - 1, 0)    # (less the listing's own)
        except OSError:
            continue
    return 0


def ensure_open_files(files: int, field: str, what: str) -> None:
    """Make room for `files` more files open at once, besides those open now and `HEADROOM`:
    the soft limit raised to what that needs where the hard limit allows it, else an
    `InputError` naming `field`; `what` says what holds them (the message's start)."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return          # (no such limit here: nothing to check)
    need = open_now() + files + HEADROOM
    if soft == resource.RLIM_INFINITY or need <= soft:
        return
    limit, which = soft, "soft"
    if hard == resource.RLIM_INFINITY or need <= hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
            return
        except (OSError, ValueError):
            pass        # (refused below, naming the soft limit that stays)
    else:
        limit, which = hard, "hard"
    raise InputError(f"{what} ({need:,} open files with the others the run holds), more than "
                     f"this process's {which} limit of {limit:,}: raise it with ulimit -n {need}"
                     + (" (as root)" if which == "hard" else ""), field=field)
