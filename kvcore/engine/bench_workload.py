"""The benchmark workload: the recipe behind the oracle's ``bench-2000.ops.jsonl.gz``.

A deterministic synthetic stream of ops (``random.Random(seed)``, drawn in a fixed order, so the
same arguments always give the same ops, the ones the oracle's ``harness bench --n N`` replays):

* ``n_prefixes`` shared prefixes, prefix k of length U[256, 1024] with tokens in [0, 32000);
* request i picks prefix ``k = int(n_prefixes * u**2)`` (Zipf-like: low k is popular), a total
  prompt length U[min_len, max_len], and its prompt is the prefix cut to ``total - 1`` tokens plus
  random tokens up to ``total`` (always at least one unique token);
* requests are admitted in order; while more than ``concurrency`` are running, the oldest runs
  ``decode_steps`` decode steps (random tokens) and is freed; the rest drain at the end.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from time import perf_counter
from typing import Any

BENCH_CONFIG: dict[str, Any] = {"groups": [{"type": "full"}], "block_size": 16,
                                "num_blocks": 16384, "hash": "sha256", "max_model_len": 32768}
# Host memory a generated request takes while the stream is built and replayed (every op is
# made first: its prompt's ~1,500 token ints and their list): `kvcli bench --n 20000` peaked
# 752 MB above `--n 2000`, 42 KB a request.
BYTES_PER_REQUEST = 43_000


def check_workload_fits(n: int, available: int | None = None) -> None:
    """Raise `InputError` (field ``n``) when ``n`` generated requests cannot fit the host memory
    left (``available`` bytes; default: `kvcore.host_memory.available_bytes()`): --n 10^8 grew
    by 150 MB a second until the machine ran out."""
    from kvcore.host_memory import GiB, check_fits

    need = n * BYTES_PER_REQUEST
    check_fits(need, f"{n:,} generated requests need ~{need / GiB:,.1f} GiB of host memory "
               f"(~{BYTES_PER_REQUEST // 1000} KB a request: the whole stream is made first)",
               field="n", available=available)


def bench_ops(n: int = 2000, seed: int = 1234, n_prefixes: int = 100, min_len: int = 1024,
              max_len: int = 2048, concurrency: int = 64, decode_steps: int = 8) -> list[dict]:
    rng = random.Random(seed)
    prefixes = []
    for _ in range(n_prefixes):
        length = rng.randint(256, 1024)
        prefixes.append([rng.randrange(32000) for _ in range(length)])
    ops: list[dict] = []
    running: list[str] = []

    def finish(rid: str) -> None:
        for _ in range(decode_steps):
            ops.append({"op": "decode", "id": rid, "token": rng.randrange(32000)})
        ops.append({"op": "free", "id": rid})

    for i in range(n):
        k = int(n_prefixes * rng.random() ** 2)
        total = rng.randint(min_len, max_len)
        pre = prefixes[k][: total - 1]
        prompt = pre + [rng.randrange(32000) for _ in range(total - len(pre))]
        rid = f"r{i}"
        ops.append({"op": "new", "id": rid, "prompt": prompt})
        running.append(rid)
        if len(running) > concurrency:
            finish(running.pop(0))
    while running:
        finish(running.pop(0))
    return ops


@dataclass(slots=True)
class BenchResult:
    """What one timed replay measured. Times in seconds; ``seconds_manager`` counts only the
    manager calls (lookup, allocate, decode append + allocate, free), as the oracle's bench
    does; ``seconds_create`` is request creation with prompt hashing."""

    requests: int
    decodes: int
    frees: int
    seconds_create: float
    seconds_lookup: float
    seconds_allocate: float
    seconds_decode: float
    seconds_free: float
    queries: int
    hits: int
    hit_blocks: int
    allocated_blocks: int
    free_blocks: int
    cached_hashes: int
    rejected: int

    @property
    def seconds_manager(self) -> float:
        return self.seconds_lookup + self.seconds_allocate + self.seconds_decode + \
            self.seconds_free

    @property
    def seconds_total(self) -> float:
        return self.seconds_manager + self.seconds_create


def run_bench(cfg, ops: list[dict]) -> BenchResult:
    """Replay ``ops`` through a fresh manager built from the op-script config ``cfg``, timing
    the manager calls as the oracle's bench does.

    ``new`` (with its optional ``num_tokens`` chunk), ``prefill`` (timed as allocation),
    ``decode`` and ``free`` are replayed; ``hashes`` and ``summary`` are skipped. A refused
    admission is counted in ``rejected`` and the request is dropped (a scheduler would leave it
    waiting); a refused prefill or decode step is not counted as computed. The oracle's
    workload triggers none of these.
    """
    from kvcore.engine.script_runner import build_manager
    from kvcore.hashing import BlockHasher
    from kvcore.request import Request, RequestStatus

    mgr = build_manager(cfg)
    hasher = BlockHasher(cfg.block_size, cfg.hash, cfg.hash_seed)
    must_fit = cfg.full_sequence_must_fit
    get_computed = mgr.get_computed_blocks
    allocate = mgr.allocate_slots
    free = mgr.free
    record = mgr.record_prefix_cache_stats
    running = RequestStatus.RUNNING
    pc = perf_counter
    t_create = t_lookup = t_alloc = t_decode = t_free = 0.0
    n_new = n_dec = n_free = rejected = 0
    allocated = hit_blocks = 0
    reqs: dict[str, Request] = {}
    req: Request | None
    for op in ops:
        kind = op["op"]
        if kind == "new":
            a = pc()
            req = Request(op["id"], op["prompt"], hasher)
            b = pc()
            blocks, hit, _ = get_computed(req)
            c = pc()
            n = req.num_tokens - hit
            chunk = op.get("num_tokens")
            if chunk is not None and chunk < n:
                n = chunk
            new = allocate(req, n, hit, blocks, full_sequence_must_fit=must_fit) \
                if n or hit else None
            if new is not None:
                record(req, hit)
                req.status = running
                req.num_computed_tokens = hit + n
            e = pc()
            t_create += b - a
            t_lookup += c - b
            t_alloc += e - c
            n_new += 1
            if new is None:
                rejected += 1
                continue
            for g in new.blocks:
                allocated += len(g)
            for g in blocks.blocks:
                hit_blocks += len(g)
            reqs[req.request_id] = req
        elif kind == "prefill":
            req = reqs.get(op["id"])
            if req is None:
                continue
            n = req.num_tokens - req.num_computed_tokens
            chunk = op.get("num_tokens")
            if chunk is not None and chunk < n:
                n = chunk
            if n <= 0:
                continue
            a = pc()
            new = allocate(req, n)
            if new is not None:
                req.num_computed_tokens += n
            t_alloc += pc() - a
            if new is not None:
                for g in new.blocks:
                    allocated += len(g)
        elif kind == "decode":
            req = reqs.get(op["id"])
            if req is None or req.num_computed_tokens != req.num_tokens:
                continue
            a = pc()
            req.append_output_token_ids(op["token"])
            new = allocate(req, 1)
            if new is not None:
                req.num_computed_tokens += 1
            t_decode += pc() - a
            n_dec += 1
            if new is not None:
                for g in new.blocks:
                    allocated += len(g)
        elif kind == "free":
            req = reqs.pop(op["id"], None)
            if req is None:
                continue
            a = pc()
            free(req)
            t_free += pc() - a
            n_free += 1
    st = mgr.make_prefix_cache_stats()
    pool = mgr.block_pool
    return BenchResult(n_new, n_dec, n_free, t_create, t_lookup, t_alloc, t_decode, t_free,
                       st.queries if st else 0, st.hits if st else 0, hit_blocks, allocated,
                       pool.get_num_free_blocks(), len(pool.cached_block_hash_to_block),
                       rejected)
