"""`kvcli bench --gpu`: paged-attention decode on the GPU over block tables kvcore produced.

The one place that joins kvcore's block tables and the kernels. Block tables come from

* ``--trace T``: the per-step benchmark instead (`kvcli.gpu_steps`: a sample of the replay's
  decode steps, each timed on its own tables and exact lengths);
* otherwise the shipped file ``kernels/data/block_tables.json.gz``, made here by driving kvcore's
  `KVCacheManager` (`ScriptRunner`) through a churned pool: background requests allocate and free
  in random order (which scrambles the free queue as it does in a server), then each case's
  requests are prefilled and decoded round-robin, so their tables are scattered and interleaved.
  ``64x4k-prefix`` shares a 2,048-token prompt prefix (prefix-cache hits: shared block ids).
  Regenerate with ``python -m kvcli.gpu_bench --write-tables`` (deterministic).

``--model`` picks the head layout (default: Llama-3.1-8B's 32 query heads, 8 KV heads, dim 128).
The benchmark itself is `kernels.bench` (torch + Triton only). Without torch or CUDA this raises
`NoDeviceError` (exit 3). JSON keys: see `kernels.bench` (``device``, ``copy_bytes_per_s``,
``device_check``, ``cases[]`` with ``kv_dtype``, ``window``, ``strategies`` {``new``, ``old``} and
``triton``/``gather_sdpa``/``sdpa_contig`` each ``time_us``/``gbps``/``pct_copy``, ``bytes``,
``num_splits``, ``correct``, ...); with ``--trace``, `kvcli.gpu_steps`.
"""

from __future__ import annotations

import gzip
import json
import random
import sys
from pathlib import Path

from kvcli.output import Table, View, message
from kvcore.errors import InputError, NoDeviceError

SHIPPED = Path(__file__).resolve().parents[1] / "kernels" / "data" / "block_tables.json.gz"
BLOCK_SIZE = 16
# name -> (sequence lengths, shared prefix tokens)
SCRIPTED_CASES: dict[str, tuple[list[int], int]] = {
    "64x4k": ([4096] * 64, 0),
    "1x32k": ([32768], 0),
    "8x8k": ([8192] * 8, 0),
    "256x1k": ([1024] * 256, 0),
    "64xvar": ([random.Random(7).randint(1, 4096) for _ in range(64)], 0),
    "64x4k-prefix": ([4096] * 64, 2048),
}


def scripted_tables(seq_lens: list[int], *, prefix: int = 0, block_size: int = BLOCK_SIZE,
                    seed: int = 0, decode_steps: int = 48) -> dict:
    """Block tables of ``len(seq_lens)`` running requests, made by kvcore's `KVCacheManager`.

    A churn phase (background requests of random lengths allocated, then freed in random order,
    leaving cached blocks behind) scrambles the free queue; then every request is admitted with
    its prompt (the first ``prefix`` tokens shared) and all are decoded round-robin
    ``decode_steps`` tokens, as a continuous batch grows.
    """
    from kvcore.engine.op_script import parse_config
    from kvcore.engine.script_runner import ScriptRunner

    rng = random.Random(seed)
    need = sum(-(-n // block_size) for n in seq_lens)
    num_blocks = need + need // 4 + 64
    cfg = parse_config({"block_size": block_size, "num_blocks": num_blocks,
                        "max_model_len": max(seq_lens) + block_size * 8, "hash": "xxhash"},
                       "<gpu-bench>", 1)
    runner = ScriptRunner(cfg)
    token = iter(range(1, 1 << 62))
    # Churn: fill about 70% of the pool with background requests, free them in random order.
    background: list[str] = []
    used = 0
    while used < 0.7 * num_blocks:
        n = rng.randint(block_size, max(2 * block_size, min(4096, max(seq_lens),
                                                             num_blocks * block_size // 8)))
        rid = f"bg{len(background)}"
        res = runner.apply({"op": "new", "id": rid, "prompt": [next(token) for _ in range(n)]})
        if not res.get("ok"):
            break
        background.append(rid)
        used += -(-n // block_size)
    rng.shuffle(background)
    for rid in background:
        runner.apply({"op": "free", "id": rid})
    shared = [next(token) for _ in range(prefix)]
    ids = []
    for i, n in enumerate(seq_lens):
        steps = min(decode_steps, max(0, n - 1))
        p = min(prefix, n - steps)
        prompt = shared[:p] + [next(token) for _ in range(n - steps - p)]
        rid = f"r{i}"
        res = runner.apply({"op": "new", "id": rid, "prompt": prompt})
        if not res.get("ok"):
            raise RuntimeError(f"scripted tables: request {i} did not fit ({num_blocks} blocks)")
        ids.append((rid, steps))
    for step in range(decode_steps):
        for rid, steps in ids:
            if step < steps:
                res = runner.apply({"op": "decode", "id": rid, "token": next(token)})
                if not res.get("ok"):
                    raise RuntimeError(f"scripted tables: decode of {rid} did not fit")
    tables = [runner.mgr.get_block_ids(rid)[0] for rid, _ in ids]
    assert all(len(t) == -(-n // block_size) for t, n in zip(tables, seq_lens))
    return {"num_blocks": num_blocks, "seq_lens": list(seq_lens),
            "block_tables": [list(t) for t in tables],
            "source": f"kvcore KVCacheManager, churned pool, seed {seed}"
                      + (f", {prefix}-token shared prefix" if prefix else "")}


def write_tables(path: Path = SHIPPED) -> dict:
    cases = {name: scripted_tables(lens, prefix=prefix, seed=i)
             for i, (name, (lens, prefix)) in enumerate(SCRIPTED_CASES.items())}
    doc = {"source": "kvcore KVCacheManager (scripted churn + prefill + round-robin decode)",
           "block_size": BLOCK_SIZE, "cases": cases}
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(path, "wb", mtime=0) as f:
        f.write(json.dumps(doc, separators=(",", ":")).encode())
    return doc


def run_gpu_bench(*, trace: str | None, model: str | None, cases: str | None,
                  sample_steps: int = 32, device: str = "cuda") -> View:
    """``--trace``: the per-step benchmark (`kvcli.gpu_steps`); otherwise `kernels.bench` over
    the shipped tables. Bad input first (exit 2: the model, the cases), then no torch or no
    CUDA: `NoDeviceError` (exit 3) before anything runs."""
    if trace:
        from kvcli.gpu_steps import run_gpu_steps, steps_view

        return steps_view(run_gpu_steps(trace, model=model, sample_steps=sample_steps,
                                        device_name=device, log=message))
    from kernels.tables import load_tables

    spec_heads = None
    if model:
        from kvcli.gpu_steps import heads_of

        spec_heads = heads_of(model)
    tables = load_tables(SHIPPED)
    names = [c.strip() for c in cases.split(",")] if cases else None
    unknown = [n for n in names or [] if n not in tables["cases"]]
    if unknown:
        raise InputError(f"unknown case {unknown[0]!r} (known: {', '.join(tables['cases'])})",
                         field="cases")
    try:
        import torch
    except ImportError:
        raise NoDeviceError("torch is not installed (pip install 'kvcli[kernels]'); "
                            "`kvcli bench --gpu` needs torch with CUDA") from None
    if not torch.cuda.is_available():
        raise NoDeviceError("no CUDA device: `kvcli bench --gpu` needs an NVIDIA GPU "
                            "(torch.cuda.is_available() is false)")
    from kernels import bench, bench_table
    from kernels.cases import CaseSpec

    spec = CaseSpec("", *spec_heads) if spec_heads else None
    doc = bench.run(names, tables, spec=spec, log=message)
    rows = bench_table.rows(doc)
    bw = doc["bandwidth"]
    caption = (f"{doc['device']}; copy (read + write) {doc['copy_bytes_per_s'] / 1e9:.0f} GB/s "
               f"(best of memcpy {bw['memcpy'] / 1e9:.0f}, triton copy {bw['triton_copy'] / 1e9:.0f}); "
               f"read-only {bw['read'] / 1e9:.0f} GB/s; "
               f"% copy = ideal bytes / time / copy bandwidth; new = waves rule + fused merge, "
               f"old = legacy rule + merge kernel")
    return View(doc, [Table("paged-attention decode", bench_table.COLUMNS, rows, caption)])


def failures(doc: dict) -> str | None:
    """What failed in a finished run (None: nothing), the line that makes it exit 1 once its
    results are out: a cache dtype whose timings stopped (``--trace``: the JSON's ``errors``),
    a case that raised or read wrong, a failed device check (`kernels.bench`'s ``ok``, whose
    own ``python -m kernels.bench`` exits 1 then). They exited 0, with the failures only in the
    JSON."""
    if doc.get("kind") == "kvcli-gpu-steps":
        errors = doc.get("errors") or {}
        if not errors:
            return None
        return (f"{len(errors)} of {len(doc['kv_dtypes'])} cache dtype(s) failed "
                f"({', '.join(errors)}): no timings for {'them' if len(errors) > 1 else 'it'} "
                "(the JSON's errors say why)")
    if doc.get("ok", True):
        return None
    bad = [c for c in doc.get("cases", []) if not c.get("correct")]
    raised = sum("error" in c for c in bad)
    check = doc.get("device_check", {}).get("failed", 0)
    parts = [(f"{len(bad)} of {len(doc.get('cases', []))} case(s) failed ({raised} raised: the "
               "JSON's cases[].error; the others read wrong: correct false)")] if bad else []
    parts += [f"the device check failed {check} spec(s) (device_check.failures)"] if check else []
    return "; ".join(parts) or "the run is not ok (the JSON's ok)"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--write-tables"]:
        d = write_tables(Path(sys.argv[2]) if len(sys.argv) > 2 else SHIPPED)
        for name, c in d["cases"].items():
            print(name, len(c["seq_lens"]), c["num_blocks"], c["source"])
    else:
        print("usage: python -m kvcli.gpu_bench --write-tables [PATH]", file=sys.stderr)
        sys.exit(2)
