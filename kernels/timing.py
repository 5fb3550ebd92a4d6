"""Timing on a GPU as the benchmarks do it, and the memory ceiling they are compared with.

`time_launches` warms up, captures several launches in a CUDA graph (no Python launch overhead
in the measurement) and takes the median of event-timed replays; `copy_bandwidth` measures
device-to-device copies (``cudaMemcpy`` and a Triton copy) and a read-only stream on the same
GPU. On CPU tensors (the interpreter smoke runs) both run once on the wall clock: the numbers
mean nothing there, the code path is what is exercised.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch

ROTATE_BYTES = 512 << 20   # each timed launch reads a different copy until this much is cycled


class NoDevice(RuntimeError):
    """Raised when CUDA is not available (the CLIs map it to exit code 3)."""


def copies_for(nbytes: int, device: torch.device, *, each: int | None = None,
               memory_share: float = 0.25) -> int:
    """How many copies of the inputs to rotate over so that consecutive timed launches never
    find their data in L2: a launch reads ``nbytes``, so at least ``ROTATE_BYTES`` cycled, as
    far as copies of ``each`` bytes (default ``nbytes``: what one copy allocates, a whole pool
    when a launch reads a window of it) fit in ``memory_share`` of the free memory; one on CPU.
    (A cap of 8 copies cycled 59 MB for a 4,096-token fp8 window, inside an H200's 60 MB L2.)"""
    if device.type != "cuda":
        return 1
    want = -(-ROTATE_BYTES // max(1, nbytes))
    free, _ = torch.cuda.mem_get_info(device)
    return max(1, min(want, int(free * memory_share) // max(1, each or nbytes)))


def l2_bytes(device: torch.device) -> int:
    """The device's L2 cache in bytes (0 on CPU or when torch does not say)."""
    if device.type != "cuda":
        return 0
    return int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 0)


def time_launches(fns: list[Callable[[], object]], *, reps: int = 15, per_graph: int = 0
                  ) -> tuple[float, str]:
    """Median seconds per call of ``fns`` (called round-robin), and how it was timed.

    Warm up eagerly, then capture ``per_graph`` calls in a CUDA graph (taking Python launch
    overhead out) and time ``reps`` replays with events; fall back to eager launches between
    events when capture fails.
    """
    n = per_graph or max(len(fns), 4)
    if not torch.cuda.is_available():   # the CPU smoke run (interpreter): wall clock, no meaning
        t0 = time.perf_counter()        # (each call once: the interpreter has nothing to warm)
        for i in range(len(fns)):
            fns[i]()
        return (time.perf_counter() - t0) / len(fns), "cpu-eager"
    for i in range(max(3, len(fns))):
        fns[i % len(fns)]()
    torch.cuda.synchronize()
    method = "cuda-graph"
    try:
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for i in range(len(fns)):   # warm up on the capture stream too
                fns[i]()
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()
        with torch.cuda.graph(graph):
            for i in range(n):
                fns[i % len(fns)]()
        run = graph.replay
        graph.replay()
    except Exception:  # noqa: BLE001 - any capture failure: time eagerly instead
        torch.cuda.synchronize()
        method = "eager"

        def run():
            for i in range(n):
                fns[i % len(fns)]()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / n)
    return statistics.median(times), method


def copy_bandwidth(device: torch.device, nbytes: int = 4 << 30) -> dict:
    """Bytes/s of large device-to-device copies, counting bytes read plus bytes written:
    torch's ``copy_`` (``cudaMemcpy``) and a Triton copy kernel; ``best`` is the larger, the
    ceiling the kernels are compared with. ``read`` is a read-only stream (bytes read / s)."""
    from . import stream

    if device.type != "cuda":
        nbytes = 1 << 20
    n = nbytes // 4
    src = torch.empty(n, dtype=torch.int32, device=device).random_(0, 1 << 20)
    dst = torch.empty_like(src)
    partial = torch.empty(-(-n // stream.BLOCK), dtype=torch.int32, device=device)
    t_memcpy, _ = time_launches([lambda: dst.copy_(src)], reps=10, per_graph=3)
    t_kernel, _ = time_launches([lambda: stream.copy(src, dst)], reps=10, per_graph=3)
    ok = torch.equal(src, dst)
    t_read, _ = time_launches([lambda: stream.read(src, partial)], reps=10, per_graph=3)
    res = {"memcpy": 2 * nbytes / t_memcpy, "triton_copy": 2 * nbytes / t_kernel,
           "read": nbytes / t_read, "bytes": nbytes, "triton_copy_correct": ok}
    res["best"] = max(res["memcpy"], res["triton_copy"] if ok else 0.0)
    return res



def read_at_size(nbytes: int, device: torch.device) -> dict:
    """The read-only stream over ``nbytes`` (rounded down to 4-byte words), rotated over copies as
    a case's inputs are (`copies_for`): what reading a step's bytes costs with nothing else in
    the kernel, fixed costs included. A small step cannot reach the large-copy ceiling (launch,
    ramp-up, the last wave's tail); this says how far below it a plain read of that size lands.
    On CPU a 1 MiB read stands in (the smoke run: the code path, not the number)."""
    from . import stream

    if device.type != "cuda":
        nbytes = min(nbytes, 1 << 20)
    n = max(1, nbytes // 4)
    bufs = [torch.ones(n, dtype=torch.int32, device=device)
            for _ in range(copies_for(4 * n, device))]
    partial = torch.empty(-(-n // stream.BLOCK), dtype=torch.int32, device=device)
    # (the ignore: mypy cannot type a lambda's default argument against a zero-argument
    # Callable, python/mypy#15459)
    t, how = time_launches([lambda b=b: stream.read(b, partial) for b in bufs])  # type: ignore[misc]
    return {"bytes": 4 * n, "time_us": t * 1e6, "gbps": 4 * n / t / 1e9, "timing": how}
