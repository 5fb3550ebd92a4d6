"""GPU benchmark of paged-attention decode over a replay's block tables: ``python -m kernels.bench``.

Needs only torch (CUDA) and Triton: no Typer, Rich, numpy or kvcore, so it runs on a bare GPU box.
Per case it builds a KV cache whose blocks are where the block tables say (tables made by kvcore
from a replay, shipped in ``kernels/data/block_tables.json.gz``), fills it with random data, checks
the kernel against the reference on the device, then times (`kernels.bench_case`): the Triton
kernel under both split strategies (``new``: the ``waves`` rule and the fused merge; ``old``: the
measured ``legacy`` rule and the merge kernel), and the torch baselines. The matrix is every case
with a bf16 cache and an fp8 one, plus sliding-window cases (`kernels.cases.matrix`).

Bytes are the ideal bytes of one decode step (each KV byte attended to once, q, out, table,
lengths); GB/s is ideal bytes / time; "% copy" compares it with a device-to-device copy measured
first on the same GPU ((read + written bytes) / time): an fp8 case moves half the KV bytes, so
its % copy is against the same copy bandwidth for the bytes it really needs.

    python -m kernels.bench [--json] [--cases 64x4k,1x32k] [--kv-dtypes bf16,fp8] [--no-windows]
                            [--tables FILE] [--no-sweep] [--no-small-grid] [--out FILE]
    python -m kernels.bench --check        # only the correctness matrix on the device
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from .bench_case import run_case
from .bench_table import format_table
from .cases import (
    DEFAULT_CASES,
    SMOKE_WINDOW_CASES,
    CaseSpec,
    matrix,
    random_tables,
    smoke_tables,
    synthetic_lens,
)
from .tables import load_tables
from .timing import NoDevice, copy_bandwidth

TIMED = ("triton", "gather_sdpa", "sdpa_contig", "read_same_bytes")


def check_device(device: torch.device, save: Callable[[dict], None] | None = None) -> dict:
    """Every spec of `checks.device_specs` on the device; returns counts and the failures (a
    spec that raises, e.g. a compile the device's Triton refuses, is a failure with its error).
    ``save`` gets the counts so far after each spec (a run cut short by its time limit still
    says what it checked)."""
    from .checks import Result, check, device_specs

    specs = device_specs()
    results, errors = [], []
    for i, s in enumerate(specs):
        try:
            results.append(check(s, device, seed=1000 + i))
        except Exception as err:  # noqa: BLE001 - one spec's error must not hide the others
            errors.append({"name": s.name, "error": str(err).strip().splitlines()[-1][:300]})
            results.append(Result(s.name, float("nan"), float("nan"), float("inf"), False))
        if save:
            save({**_check_counts(results, errors), "of": len(specs)})
    return _check_counts(results, errors)


def _check_counts(results: list, errors: list[dict]) -> dict:
    bad = [r._asdict() for r in results if not r.ok]
    for b in bad:
        b.update(next((e for e in errors if e["name"] == b["name"]), {}))
    worst = max(results, key=lambda r: r.score)
    return {"checked": len(results), "failed": len(bad), "failures": bad,
            "worst": worst._asdict()}


def save_json(path: str | Path) -> Callable[[dict], None]:
    """A writer of the document to ``path`` that replaces the file whole (a temporary file, then
    a rename): called after each case, so a run stopped by its time limit leaves the cases it
    finished, never half a file."""
    path = Path(path)

    def save(doc: dict) -> None:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(doc, indent=2))
        tmp.replace(path)
    return save


def _pct(rec: dict, copy: float, read: float) -> None:
    if "gbps" in rec:
        rec["pct_copy"] = 100 * rec["gbps"] * 1e9 / copy
        rec["pct_read"] = 100 * rec["gbps"] * 1e9 / read


def run(cases: list[str] | None = None, tables: str | Path | dict | None = None, *,
        sweep: bool = True, check: bool = True, log: Callable[[str], None] | None = None,
        spec: CaseSpec | None = None, cpu_smoke: bool = False,
        kv_dtypes: tuple[str | None, ...] = (None, "fp8"),
        windows: list[tuple[str, int]] | None = None, small_grid: bool = True,
        sms: int | None = None, save: Callable[[dict], None] | None = None) -> dict:
    """Run the benchmark on the current CUDA device; returns the JSON document.

    ``cases`` are table names; each runs with every cache dtype in ``kv_dtypes`` (None: q's
    dtype), then the window cases among them (``windows``: (name, window) pairs, default
    `cases.WINDOW_CASES`; [] for none). ``cpu_smoke`` runs the same code on
    CPU tensors under the interpreter (``TRITON_INTERPRET=1``) with small shapes (``spec``): it
    exercises the benchmark, its times mean nothing; ``sms`` then pretends an SM count so that
    the split rules split. ``save`` gets the document after each case (``done`` false until
    the last).
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
        name, device_sms = props.name, props.multi_processor_count
    else:
        name, device_sms = "cpu (interpreter smoke run; times mean nothing)", 0
    doc = {"device": name, "sms": sms or device_sms,
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
    specs = matrix(cases or DEFAULT_CASES, kv_dtypes, windows, spec or CaseSpec(""))
    for i, case in enumerate(specs):
        tab = data["cases"].get(case.name) or random_tables(*synthetic_lens(case.name), block_size)
        t0 = time.time()
        # (the smoke run sweeps one small grid: the code path, not the numbers, is its point)
        once = cpu_smoke and any("small_grid_sweep" in c for c in doc["cases"])
        try:
            res = run_case(case, tab, block_size, device, sweep=sweep and i == 0,
                           config=config, small_grid=small_grid and not once, sms=sms)
        except Exception as err:  # noqa: BLE001 - a case that fails must not hide the others
            msg = str(err).strip().splitlines()[-1][:300] if str(err).strip() else repr(err)
            doc["cases"].append({"case": case.label, "error": msg, "correct": False})
            log(f"{case.label}: error: {msg}")
            if device.type == "cuda":
                torch.cuda.empty_cache()
            if save:
                save({**doc, "done": False})
            continue
        if sweep and i == 0:
            from .triton_decode import LaunchConfig
            config = LaunchConfig(*res["config"])
        for m in TIMED:
            if m in res:
                _pct(res[m], doc["copy_bytes_per_s"], bw["read"])
        same = res.get("read_same_bytes", {}).get("time_us")
        for s in res["strategies"].values():
            _pct(s, doc["copy_bytes_per_s"], bw["read"])
            if same and "time_us" in s:   # 100: as fast as a plain read of the same bytes
                s["pct_same_size_read"] = 100 * same / s["time_us"]
        doc["cases"].append(res)
        new, old = res["strategies"]["new"], res["strategies"]["old"]
        log(f"{res['case']}: new {new.get('time_us', 0):.1f} us ({new.get('pct_copy', 0):.0f}% "
            f"of copy, {new['num_splits']} splits), old {old.get('time_us', 0):.1f} us "
            f"({old.get('pct_copy', 0):.0f}%), correct={res['correct']} "
            f"({time.time() - t0:.0f} s)")
        if save:
            save({**doc, "done": False})
    doc["done"] = True
    doc["ok"] = all(c["correct"] for c in doc["cases"]) and (
        not check or doc["device_check"]["failed"] == 0)
    return doc


def _kv_dtypes(text: str) -> tuple[str | None, ...]:
    known = {"bf16": None, "fp8": "fp8"}
    out = []
    for x in text.split(","):
        if x.strip() not in known:
            print(f"error: option --kv-dtypes: unknown {x.strip()!r} (bf16, fp8)",
                  file=sys.stderr)
            raise SystemExit(2)
        out.append(known[x.strip()])
    return tuple(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels.bench", description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print the JSON document on stdout")
    ap.add_argument("--cases", help=f"comma-separated (default: {','.join(DEFAULT_CASES)})")
    ap.add_argument("--kv-dtypes", default="bf16,fp8", help="cache dtypes (default bf16,fp8)")
    ap.add_argument("--no-windows", action="store_true", help="skip the sliding-window cases")
    ap.add_argument("--tables", help="block tables file (default: the shipped one)")
    ap.add_argument("--no-sweep", action="store_true", help="skip the launch-config sweep")
    ap.add_argument("--no-small-grid", action="store_true",
                    help="skip the config x splits x merge sweep of the cases that split")
    ap.add_argument("--no-check", action="store_true", help="skip the device correctness matrix")
    ap.add_argument("--check", action="store_true", help="only the device correctness matrix")
    ap.add_argument("--out", help="also write the JSON document to this file (rewritten after "
                    "each case or check, so a run cut short leaves what it finished)")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="tiny run on CPU under TRITON_INTERPRET=1 (exercises the code only)")
    args = ap.parse_args(argv)
    kv_dtypes = _kv_dtypes(args.kv_dtypes)

    def log(s: str) -> None:
        print(s, file=sys.stderr, flush=True)
    save = save_json(args.out) if args.out else None
    try:
        if args.check:
            if not torch.cuda.is_available():
                raise NoDevice("no CUDA device (torch.cuda.is_available() is false)")
            doc = check_device(torch.device("cuda"), save)
            doc["ok"] = doc["failed"] == 0
            if save:
                save(doc)
            print(json.dumps(doc, indent=2))
            return 0 if doc["ok"] else 1
        if args.cpu_smoke:
            data = smoke_tables()
            doc = run(list(data["cases"]), data, sweep=False, check=False, log=log,
                      spec=CaseSpec("", 8, 2, 32), cpu_smoke=True, kv_dtypes=kv_dtypes,
                      windows=[] if args.no_windows else SMOKE_WINDOW_CASES, sms=4, save=save)
        else:
            doc = run(args.cases.split(",") if args.cases else None, args.tables,
                      sweep=not args.no_sweep, check=not args.no_check, log=log,
                      kv_dtypes=kv_dtypes, windows=[] if args.no_windows else None,
                      small_grid=not args.no_small_grid, save=save)
    except NoDevice as err:
        print(f"error: {err}", file=sys.stderr)
        return 3
    if save:
        save(doc)
    print(json.dumps(doc, indent=2) if args.json else format_table(doc))
    return 0 if doc["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
