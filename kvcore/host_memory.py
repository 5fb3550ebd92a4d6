"""Host memory a block pool costs, and whether this machine has it: a pool too large for the
machine is refused before a block is allocated, with the arithmetic in the message.

The pool is one `KVCacheBlock` per block id, shared by every KV cache group (as vLLM's
`BlockPool`): measured with tracemalloc on a `KVCacheManager` of 20,000 blocks, 136 bytes a
block on the pure-Python stack and 144 on the compiled build (the object with its 8 slots, its
id as an int object and its slot in the pool's list), the same with one group or two. A block that holds a cached prefix adds its hash and its entry in the prefix-cache
map, about 250 bytes more (measured: the cache-mode replay of `traces/multiturn-chat.jsonl`
with and without prefix caching); a pool that fills up costs both, so the check counts both.

Available memory is /proc/meminfo's ``MemAvailable`` (else ``os.sysconf``'s available pages),
and no more than an address-space limit (``RLIMIT_AS``) leaves this process. Where neither can be
read, nothing is refused.
"""

from __future__ import annotations

import os

from kvcore.errors import InputError

GiB = 1 << 30
# The most GiB a memory option takes: 1 PiB, thousands of times any GPU (and far from the floats
# that overflow when multiplied out to bytes). The sizing layer and the CPU tier check it.
MAX_GIB = float(1 << 20)
POOL_BYTES_PER_BLOCK = 140      # a KVCacheBlock in the pool (measured, see above)
CACHED_BYTES_PER_BLOCK = 256    # its hash and prefix-cache entry once it holds a cached block
BYTES_PER_BLOCK = POOL_BYTES_PER_BLOCK + CACHED_BYTES_PER_BLOCK
# A worker process (`kvcli sweep`, `kvcli curve --jobs`) before its first replay: 26-37 MB RSS
# measured for Python with kvcore's replay imported (`/usr/bin/time -f %M`), rounded up.
WORKER_BYTES = 48 << 20
# A cluster replica besides its pool: its ReplayContext, scheduler, clock and records, ~10-20 KB
# at start-up (tracemalloc over 200 replicas of traces/multiturn-chat.jsonl at 80 to 1,024
# blocks), its metrics and the router's state of it on top: rounded up. `--replicas 100000
# --num-blocks 128` grew to 2.8 GB, past what the pool check alone counted.
REPLICA_BYTES = 32 << 10


def pool_bytes(num_blocks: int) -> int:
    """Host bytes a pool of `num_blocks` blocks may take once full (every block cached)."""
    return num_blocks * BYTES_PER_BLOCK


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def _address_space_left() -> int | None:
    """What an address-space limit (RLIMIT_AS) leaves this process, if it has one."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY:
        return None
    used = 0
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmSize:"):
                    used = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    return max(soft - used, 0)


def available_bytes() -> int | None:
    """Host memory this process can still take, in bytes (None: unknown)."""
    known = [b for b in (_meminfo_available(), _address_space_left()) if b is not None]
    return min(known) if known else None


def check_fits(need: int, what: str, *, field: str, available: int | None = None,
               path: str | None = None, line: int | None = None) -> None:
    """Raise `InputError` (naming `field`, and the file and line that asked, when given) when
    ``need`` bytes cannot fit the host memory left (`available` bytes; default:
    `available_bytes()`, not read for less than a GiB); the message is ``what`` (what needs
    them, and why) followed by what this machine has."""
    if available is None:
        if need < GiB:          # never worth a look at /proc
            return
        available = available_bytes()
        if available is None:
            return
    if need > available:
        raise InputError(f"{what}; this machine has {available / GiB:,.1f} GiB available",
                         field=field, path=path, line=line)


def check_pool_fits(num_blocks: int, *, field: str = "num_blocks",
                    available: int | None = None) -> None:
    """Raise `InputError` (naming `field`) when a pool of `num_blocks` blocks cannot fit the
    host memory left (`available` bytes; default: `available_bytes()`)."""
    need = pool_bytes(num_blocks)
    check_fits(need, f"{num_blocks:,} blocks need ~{need / GiB:,.1f} GiB of host memory for the "
               f"pool ({BYTES_PER_BLOCK} bytes a block: {POOL_BYTES_PER_BLOCK} for the block, "
               f"{CACHED_BYTES_PER_BLOCK} for its prefix-cache entry)", field=field,
               available=available)


def engines_bytes(num_blocks: int, replicas: int | None = None) -> int:
    """Host bytes a replay's pool (`replicas` None) or a cluster's engines take at most: per
    replica its own objects and its pool."""
    if replicas is None:
        return pool_bytes(num_blocks)
    return replicas * (REPLICA_BYTES + pool_bytes(num_blocks))


def check_replicas_fit(replicas: int, num_blocks: int, *, available: int | None = None) -> None:
    """Raise `InputError` (naming `replicas`) when `replicas` engines of `num_blocks` blocks
    each cannot fit the host memory left: the engine's own objects and its pool, per replica."""
    need = engines_bytes(num_blocks, replicas)
    each = need // replicas
    check_fits(need, f"{replicas:,} replicas need ~{need / GiB:,.1f} GiB of host memory "
               f"(~{each >> 10:,} KiB each: ~{REPLICA_BYTES >> 10} KiB for the engine, "
               f"{BYTES_PER_BLOCK} bytes a block of its {num_blocks:,})", field="replicas",
               available=available)


def check_parallel_jobs(job_bytes: list[int], workers: int, *, field: str = "jobs",
                        available: int | None = None) -> None:
    """Raise `InputError` (naming `field`) when the jobs that may run at once cannot fit the
    host memory left: each of `workers` processes may hold one of the largest jobs (`job_bytes`:
    each job's `engines_bytes`) at the same time. Every job fitting alone was checked already;
    `kvcli sweep --jobs 4` of four 8 GiB pools asked 32 GiB of a 24 GiB machine."""
    top = sorted(job_bytes, reverse=True)[:max(workers, 1)]
    need = sum(top) + len(top) * WORKER_BYTES
    check_fits(need, f"{len(top):,} jobs at once (one a worker process) need ~{need / GiB:,.1f} "
               f"GiB of host memory: the largest of this sweep's pools together, and "
               f"~{WORKER_BYTES >> 20} MiB a worker (a smaller --jobs runs fewer at once)",
               field=field, available=available)


def check_workers(n: int, *, field: str = "jobs", available: int | None = None) -> None:
    """Raise `InputError` (naming `field`) when `n` worker processes cannot fit the host memory
    left: `--jobs 100000` started as many Python processes and took the machine down."""
    need = n * WORKER_BYTES
    check_fits(need, f"{n:,} worker processes need ~{need / GiB:,.1f} GiB of host memory "
               f"(~{WORKER_BYTES >> 20} MiB each before their first replay)", field=field,
               available=available)
