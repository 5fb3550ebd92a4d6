"""GPU benchmark of paged-attention decode over a replay's block tables: ``python -m kernels.bench``.

Needs only torch (CUDA) and Triton: no Typer, Rich, numpy or kvcore, so it runs on a bare GPU box.
Per case it builds a KV cache whose blocks are where the block tables say (tables made by kvcore
from a replay, shipped in ``kernels/data/block_tables.json.gz``), fills it with random data, checks
the kernel against the reference on the device, then times with CUDA events (warm-up, CUDA-graph
replays of several launches rotating over cache copies larger than L2, medians):

* ``triton``      the paged kernel (``kernels.paged_decode``);
* ``gather_sdpa`` gather the KV through the block table into contiguous tensors, then SDPA;
* ``sdpa_contig`` SDPA on KV that is already contiguous (no paging: the lower bound to beat).

Bytes are the ideal bytes of one decode step (each KV byte once, q, out, table, lengths); GB/s is
ideal bytes / time; "% copy" compares it with a device-to-device copy measured first on the same
GPU ((read + written bytes) / time).

    python -m kernels.bench [--json] [--cases 64x4k,1x32k] [--tables FILE] [--no-sweep]
    python -m kernels.bench --check        # only the correctness matrix on the device
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import torch

DATA = Path(__file__).resolve().parent / "data" / "block_tables.json.gz"
ROTATE_BYTES = 512 << 20   # each timed launch reads a different copy until this much is cycled
SWEEP = [(64, 4, 2), (64, 4, 3), (64, 8, 2), (128, 4, 2), (128, 8, 2), (128, 8, 3), (32, 4, 3),
         (32, 2, 4)]


class CaseSpec(NamedTuple):
    """A benchmark case: the head layout; lengths and block tables come from the tables file."""

    name: str
    num_q_heads: int = 32     # Llama-3.1-8B: 32 query heads, 8 KV heads, head dim 128
    num_kv_heads: int = 8
    head_dim: int = 128
    dtype: str = "bf16"


DEFAULT_CASES = ["64x4k", "1x32k", "8x8k", "256x1k", "64xvar", "64x4k-prefix"]


class NoDevice(RuntimeError):
    """Raised when CUDA is not available (the CLI maps it to exit code 3)."""


# --- block tables ----------------------------------------------------------------------------

def load_tables(path: str | Path | None = None) -> dict:
    """The tables file: ``{"source", "block_size", "cases": {name: {num_blocks, seq_lens,
    block_tables}}}`` (gzipped JSON, so that no numpy is needed to read it)."""
    path = Path(path) if path else DATA
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def random_tables(seq_lens: list[int], block_size: int, seed: int = 0) -> dict:
    """Fallback when a case is not in the file: distinct blocks in a random order."""
    need = [-(-n // block_size) for n in seq_lens]
    num_blocks = sum(need) + 64
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(num_blocks, generator=g).tolist()
    rows, at = [], 0
    for n in need:
        rows.append(perm[at:at + n])
        at += n
    return {"num_blocks": num_blocks, "seq_lens": seq_lens, "block_tables": rows,
            "source": "random permutation"}


def ideal_bytes(seq_lens: list[int], num_q_heads: int, num_kv_heads: int, head_dim: int,
                elem: int, block_size: int) -> int:
    """One decode step's ideal traffic: KV once, q read, out written, block table and lengths."""
    kv = sum(seq_lens) * num_kv_heads * head_dim * 2 * elem
    qo = 2 * len(seq_lens) * num_q_heads * head_dim * elem
    tables = sum(-(-n // block_size) for n in seq_lens) * 4 + 4 * len(seq_lens)
    return kv + qo + tables


# --- timing ----------------------------------------------------------------------------------

def time_launches(fns: list[Callable[[], object]], *, reps: int = 15, per_graph: int = 0
                  ) -> tuple[float, str]:
    """Median seconds per call of ``fns`` (called round-robin), and how it was timed.

    Warm up eagerly, then capture ``per_graph`` calls in a CUDA graph (taking Python launch
    overhead out) and time ``reps`` replays with events; fall back to eager launches between
    events when capture fails.
    """
    n = per_graph or max(len(fns), 4)
    if not torch.cuda.is_available():   # the CPU smoke run (interpreter): wall clock, no meaning
        fns[0]()
        t0 = time.perf_counter()
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


# --- one case --------------------------------------------------------------------------------

class Built(NamedTuple):
    q: list[torch.Tensor]
    kv: list[torch.Tensor]          # [num_blocks, 2, page, Hkv, D] per copy
    out: list[torch.Tensor]
    block_tables: torch.Tensor
    seq_lens: torch.Tensor
    lens: list[int]


def build(spec: CaseSpec, tab: dict, block_size: int, device: torch.device) -> Built:
    from .checks import DTYPES

    dtype = DTYPES[spec.dtype]
    lens = list(tab["seq_lens"])
    kv_bytes = tab["num_blocks"] * 2 * block_size * spec.num_kv_heads * spec.head_dim * dtype.itemsize
    copies = max(1, min(8, math.ceil(ROTATE_BYTES / max(1, kv_bytes))))
    if device.type != "cuda":
        copies = 1
    max_blocks = max(1, max(len(r) for r in tab["block_tables"]))
    bt = torch.zeros(len(lens), max_blocks, dtype=torch.int32)
    for s, row in enumerate(tab["block_tables"]):
        bt[s, :len(row)] = torch.tensor(row, dtype=torch.int32)
    shape = (tab["num_blocks"], 2, block_size, spec.num_kv_heads, spec.head_dim)
    kv = [torch.randn(shape, device=device, dtype=dtype) for _ in range(copies)]
    q = [torch.randn(len(lens), spec.num_q_heads, spec.head_dim, device=device, dtype=dtype)
         for _ in range(copies)]
    out = [torch.empty_like(x) for x in q]
    return Built(q, kv, out, bt.to(device), torch.tensor(lens, dtype=torch.int32, device=device),
                 lens)


def gather_kv(b: Built, i: int, block_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """KV gathered through the block table: [S, Hkv, L, D] views of fresh [S, L, Hkv, D] copies
    (the layout SDPA's flash kernel reads natively)."""
    max_len = max(b.lens) if b.lens else 0
    nb = -(-max_len // block_size)
    idx = b.block_tables[:, :nb].long()

    def one(cache: torch.Tensor) -> torch.Tensor:          # [blocks, page, Hkv, D]
        x = cache[idx]                                      # [S, nb, page, Hkv, D]
        return x.reshape(x.shape[0], nb * block_size, *x.shape[-2:])[:, :max_len].transpose(1, 2)

    return one(b.kv[i][:, 0]), one(b.kv[i][:, 1])


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None
         ) -> torch.Tensor:
    """Decode attention with SDPA: the GQA group becomes the query-length axis, so every
    backend applies (no enable_gqa needed) and KV is read once per KV head."""
    s, hq, d = q.shape
    hkv = k.shape[1]
    qg = q.view(s, hkv, hq // hkv, d)
    o = torch.nn.functional.scaled_dot_product_attention(qg, k, v, attn_mask=mask)
    return o.reshape(s, hq, d)


def length_mask(lens: list[int], device: torch.device) -> torch.Tensor | None:
    if len(set(lens)) <= 1:
        return None
    max_len = max(lens)
    pos = torch.arange(max_len, device=device)
    return (pos[None, :] < torch.tensor(lens, device=device)[:, None])[:, None, None, :]


def run_case(spec: CaseSpec, tab: dict, block_size: int, device: torch.device, *,
             sweep: bool = False, config=None) -> dict:
    from . import paged_decode, paged_decode_reference
    from .triton_decode import DEFAULT_CONFIG, LaunchConfig, choose_num_splits, num_sms

    config = config or DEFAULT_CONFIG
    b = build(spec, tab, block_size, device)
    nbytes = ideal_bytes(b.lens, spec.num_q_heads, spec.num_kv_heads, spec.head_dim,
                         b.q[0].element_size(), block_size)
    max_len = max(b.lens)
    splits = choose_num_splits(len(b.lens), spec.num_kv_heads, max_len, num_sms(device),
                               tile_n=config.tile_n)
    res = {"case": spec.name, "source": tab.get("source", ""), "num_seqs": len(b.lens),
           "total_tokens": sum(b.lens), "max_len": max_len, "dtype": spec.dtype,
           "heads": f"{spec.num_q_heads}/{spec.num_kv_heads}x{spec.head_dim}",
           "block_size": block_size, "num_blocks": tab["num_blocks"],
           "distinct_blocks": len({x for r in tab["block_tables"] for x in r}),
           "copies": len(b.kv), "bytes": nbytes, "num_splits": splits, "config": list(config)}

    def kernel(i: int, cfg=config, p=splits):
        kv = b.kv[i]
        return paged_decode(b.q[i], kv[:, 0], kv[:, 1], b.block_tables, b.seq_lens,
                            num_splits=p, config=cfg, out=b.out[i])

    # Correctness first, on the device: the kernel against the reference and against SDPA.
    out = kernel(0).float()
    ref = paged_decode_reference(b.q[0], b.kv[0][:, 0], b.kv[0][:, 1], b.block_tables,
                                 b.seq_lens).float()
    k, v = gather_kv(b, 0, block_size)
    mask = length_mask(b.lens, device)
    via_sdpa = sdpa(b.q[0], k, v, mask).float()
    res["max_err_vs_reference"] = (out - ref).abs().max().item()
    res["max_err_vs_sdpa"] = (out - via_sdpa).abs().max().item()
    res["correct"] = bool(res["max_err_vs_reference"] <= 2e-2 and torch.isfinite(out).all())
    k = v = out = ref = via_sdpa = None   # free them before timing

    def record(name: str, t: float, method: str) -> None:
        res[name] = {"time_us": t * 1e6, "gbps": nbytes / t / 1e9, "timing": method}

    if sweep:
        tried = []
        for c in SWEEP:
            cfg = LaunchConfig(*c)
            try:
                t, _ = time_launches([lambda i=i, cfg=cfg: kernel(i, cfg)
                                      for i in range(len(b.kv))])
                tried.append({"config": list(c), "time_us": t * 1e6,
                              "gbps": nbytes / t / 1e9})
            except Exception as err:  # noqa: BLE001 - a config the GPU refuses: skip it
                tried.append({"config": list(c), "error": str(err).splitlines()[0][:200]})
        res["sweep"] = tried
        ok = [x for x in tried if "time_us" in x]
        if ok:
            config = LaunchConfig(*min(ok, key=lambda x: x["time_us"])["config"])
            res["config"] = list(config)
    # The split heuristic's neighbours, for the record (the table reports the heuristic's pick).
    alts = []
    for p in sorted({max(1, splits // 2), splits, min(128, splits * 2)}):
        try:
            t, _ = time_launches([lambda i=i, p=p: kernel(i, config, p) for i in range(len(b.kv))])
            alts.append({"num_splits": p, "time_us": t * 1e6, "gbps": nbytes / t / 1e9})
        except Exception as err:  # noqa: BLE001
            alts.append({"num_splits": p, "error": str(err).splitlines()[0][:200]})
    res["split_sweep"] = alts
    t, how = time_launches([lambda i=i: kernel(i, config) for i in range(len(b.kv))])
    record("triton", t, how)

    t, how = time_launches([lambda i=i: sdpa(b.q[i], *gather_kv(b, i, block_size), mask)
                            for i in range(len(b.kv))])
    record("gather_sdpa", t, how)

    contig = [gather_kv(b, i, block_size) for i in range(len(b.kv))]
    contig = [(k.transpose(1, 2).contiguous().transpose(1, 2),
               v.transpose(1, 2).contiguous().transpose(1, 2)) for k, v in contig]
    t, how = time_launches([lambda i=i: sdpa(b.q[i], *contig[i], mask) for i in range(len(b.kv))])
    record("sdpa_contig", t, how)
    return res


# --- the whole run ---------------------------------------------------------------------------

def check_device(device: torch.device) -> dict:
    """Every spec of `checks.device_specs` on the device; returns counts and the failures."""
    from .checks import check, device_specs

    results = [check(s, device, seed=1000 + i) for i, s in enumerate(device_specs())]
    bad = [r._asdict() for r in results if not r.ok]
    worst = max(results, key=lambda r: r.score)
    return {"checked": len(results), "failed": len(bad), "failures": bad,
            "worst": worst._asdict()}


def run(cases: list[str] | None = None, tables: str | Path | dict | None = None, *,
        sweep: bool = True, check: bool = True, log: Callable[[str], None] | None = None,
        spec: CaseSpec | None = None, cpu_smoke: bool = False) -> dict:
    """Run the benchmark on the current CUDA device; returns the JSON document.

    ``cpu_smoke`` runs the same code on CPU tensors under the interpreter (``TRITON_INTERPRET=1``)
    with small shapes (``spec``): it exercises the benchmark, its times mean nothing.
    """
    import triton

    from .triton_decode import INTERPRET

    if cpu_smoke:
        if not INTERPRET:
            raise NoDevice("--cpu-smoke needs TRITON_INTERPRET=1")
        device = torch.device("cpu")
    elif not torch.cuda.is_available():
        raise NoDevice("no CUDA device (torch.cuda.is_available() is false)")
    else:
        device = torch.device("cuda")
    log = log or (lambda s: None)
    data = tables if isinstance(tables, dict) else load_tables(tables)
    block_size = int(data["block_size"])
    torch.manual_seed(0)
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        name, sms = props.name, props.multi_processor_count
    else:
        name, sms = "cpu (interpreter smoke run; times mean nothing)", 0
    doc = {"device": name, "sms": sms,
           "torch": torch.__version__, "triton": triton.__version__,
           "tables": data.get("source", ""), "block_size": block_size}
    if check:
        t0 = time.time()
        doc["device_check"] = check_device(device)
        log(f"device check: {doc['device_check']['checked'] - doc['device_check']['failed']}"
            f"/{doc['device_check']['checked']} passed ({time.time() - t0:.0f} s)")
    bw = copy_bandwidth(device)
    doc["copy_bytes_per_s"] = bw["best"]
    doc["bandwidth"] = bw
    log(f"copy bandwidth (read + write): memcpy {bw['memcpy'] / 1e9:.0f} GB/s, triton copy "
        f"{bw['triton_copy'] / 1e9:.0f} GB/s; read-only stream {bw['read'] / 1e9:.0f} GB/s")
    doc["cases"] = []
    config = None
    for i, name in enumerate(cases or DEFAULT_CASES):
        tab = data["cases"].get(name) or random_tables(*_synthetic(name), block_size)
        t0 = time.time()
        case = spec._replace(name=name) if spec else CaseSpec(name)
        res = run_case(case, tab, block_size, device, sweep=sweep and i == 0, config=config)
        if sweep and i == 0:
            from .triton_decode import LaunchConfig
            config = LaunchConfig(*res["config"])
        for m in ("triton", "gather_sdpa", "sdpa_contig"):
            res[m]["pct_copy"] = 100 * res[m]["gbps"] * 1e9 / doc["copy_bytes_per_s"]
            res[m]["pct_read"] = 100 * res[m]["gbps"] * 1e9 / bw["read"]
        doc["cases"].append(res)
        log(f"{name}: triton {res['triton']['time_us']:.1f} us "
            f"({res['triton']['pct_copy']:.0f}% of copy), correct={res['correct']} "
            f"({time.time() - t0:.0f} s)")
    doc["ok"] = all(c["correct"] for c in doc["cases"]) and (
        not check or doc["device_check"]["failed"] == 0)
    return doc


def smoke_tables() -> dict:
    cases = {"4x100": random_tables([100] * 4, 16, seed=1),
             "3xvar": random_tables([0, 37, 250], 16, seed=2)}
    return {"source": "random permutation (smoke)", "block_size": 16, "cases": cases}


def _synthetic(name: str) -> tuple[list[int]]:
    seqs, _, ctx = name.partition("x")
    n = {"1k": 1024, "4k": 4096, "8k": 8192, "32k": 32768}.get(ctx.split("-")[0], 4096)
    return ([n] * int(seqs),)


COLUMNS = ("case", "seqs", "tokens", "splits", "MB", "triton us", "GB/s", "% copy", "% read",
           "gather+sdpa us", "% copy", "sdpa contig us", "% copy", "vs gather", "err")


def rows(doc: dict) -> list[tuple]:
    out = []
    for c in doc["cases"]:
        t, g, s = c["triton"], c["gather_sdpa"], c["sdpa_contig"]
        out.append((c["case"], c["num_seqs"], c["total_tokens"], c["num_splits"],
                    round(c["bytes"] / 1e6, 1), round(t["time_us"], 1), round(t["gbps"]),
                    round(t["pct_copy"], 1), round(t["pct_read"], 1), round(g["time_us"], 1),
                    round(g["pct_copy"], 1),
                    round(s["time_us"], 1), round(s["pct_copy"], 1),
                    round(g["time_us"] / t["time_us"], 2), f"{c['max_err_vs_reference']:.1e}"))
    return out


def format_table(doc: dict) -> str:
    bw = doc["bandwidth"]
    head = (f"{doc['device']} ({doc['sms']} SMs), torch {doc['torch']}, triton {doc['triton']}; "
            f"tables: {doc['tables']}")
    ceiling = (f"copy (read + write): memcpy {bw['memcpy'] / 1e9:.0f} GB/s, triton copy "
               f"{bw['triton_copy'] / 1e9:.0f} GB/s -> '% copy' uses "
               f"{doc['copy_bytes_per_s'] / 1e9:.0f} GB/s; "
               f"read-only stream {bw['read'] / 1e9:.0f} GB/s")
    lines = [head, ceiling]
    table = [COLUMNS] + [tuple(str(x) for x in r) for r in rows(doc)]
    widths = [max(len(r[i]) for r in table) for i in range(len(COLUMNS))]
    for r in table:
        lines.append("  ".join(x.rjust(w) for x, w in zip(r, widths)))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels.bench", description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print the JSON document on stdout")
    ap.add_argument("--cases", help=f"comma-separated (default: {','.join(DEFAULT_CASES)})")
    ap.add_argument("--tables", help="block tables file (default: the shipped one)")
    ap.add_argument("--no-sweep", action="store_true", help="skip the launch-config sweep")
    ap.add_argument("--no-check", action="store_true", help="skip the device correctness matrix")
    ap.add_argument("--check", action="store_true", help="only the device correctness matrix")
    ap.add_argument("--out", help="also write the JSON document to this file")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="tiny run on CPU under TRITON_INTERPRET=1 (exercises the code only)")
    args = ap.parse_args(argv)
    def log(s: str) -> None:
        print(s, file=sys.stderr, flush=True)
    try:
        if args.check:
            if not torch.cuda.is_available():
                raise NoDevice("no CUDA device (torch.cuda.is_available() is false)")
            doc = check_device(torch.device("cuda"))
            doc["ok"] = doc["failed"] == 0
            print(json.dumps(doc, indent=2))
            return 0 if doc["ok"] else 1
        if args.cpu_smoke:
            doc = run(["4x100", "3xvar"], smoke_tables(), sweep=False, check=False, log=log,
                      spec=CaseSpec("", 8, 2, 32), cpu_smoke=True)
        else:
            doc = run(args.cases.split(",") if args.cases else None, args.tables,
                      sweep=not args.no_sweep, check=not args.no_check, log=log)
    except NoDevice as err:
        print(f"error: {err}", file=sys.stderr)
        return 3
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=2))
    print(json.dumps(doc, indent=2) if args.json else format_table(doc))
    return 0 if doc["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
