"""One benchmark case on a device: correctness first, then every timing the table reports.

For a `CaseSpec` over a tables-file case: the kernel's output (both split strategies) against the
torch reference on the device (and SDPA for a bf16 case without window), then the times:

* ``strategies``: ``new`` and ``old`` (`kernels.splits.STRATEGIES`), each at the count its rule
  picks, with its neighbours (half, double) in ``split_sweep``; ``triton`` repeats ``new``;
* ``sweep`` (the run's first case only): launch configs, ``new`` strategy;
* ``small_grid_sweep`` (cases that split): launch configs x split counts x both merges, so a
  GPU session can see which combination a small grid wants;
* ``gather_sdpa`` and ``sdpa_contig``: the torch baselines (bf16 cache, no window only);
* ``read_same_bytes``: a plain read of the case's bytes (`timing.read_at_size`), the ceiling at
  this size, fixed costs included.

Bytes are the ideal bytes of the step (`cases.ideal_bytes`: fp8's are half for the KV part, a
window's only its keys); GB/s = bytes / time.
"""

from __future__ import annotations

from typing import Any

import torch

from .cases import CaseSpec, build, gather_kv, ideal_bytes, keys_read, length_mask, sdpa
from .timing import read_at_size, time_launches

SWEEP = [(64, 4, 2), (64, 4, 3), (64, 8, 2), (128, 4, 2), (128, 8, 2), (128, 8, 3), (32, 4, 3),
         (32, 2, 4)]
SMALL_GRID_SWEEP = [(64, 4, 2), (64, 4, 3), (64, 4, 4), (128, 4, 2), (32, 4, 3)]


def _timed(fns: list, nbytes: int) -> dict[str, Any]:
    try:
        t, how = time_launches(fns)
    except Exception as err:  # noqa: BLE001 - a config or count the GPU refuses: say so, go on
        return {"error": str(err).splitlines()[0][:200]}
    return {"time_us": t * 1e6, "gbps": nbytes / t / 1e9, "timing": how}


def run_case(spec: CaseSpec, tab: dict, block_size: int, device: torch.device, *,
             sweep: bool = False, config: Any = None, small_grid: bool = True,
             sms: int | None = None) -> dict:
    """Check and time one case; the JSON record of ``kernels.bench``'s ``cases[]``. ``sms``
    overrides the device's SM count for the split rules (the CPU smoke run's pretend GPU)."""
    from . import paged_decode, paged_decode_reference
    from .splits import STRATEGIES, num_sms, pick_num_splits
    from .triton_decode import DEFAULT_CONFIG, LaunchConfig

    config = config or DEFAULT_CONFIG
    b = build(spec, tab, block_size, device)
    fp8 = spec.kv_dtype is not None
    nbytes = ideal_bytes(b.lens, spec.num_q_heads, spec.num_kv_heads, spec.head_dim,
                         b.q[0].element_size(), block_size, kv_elem=b.kv[0].element_size(),
                         window=spec.window)
    max_len = max(b.lens)
    eff_len = min(max_len, spec.window + config.tile_n) if spec.window else max_len
    sms = sms or num_sms(device)
    picks = {name: pick_num_splits(s, len(b.lens), spec.num_kv_heads, eff_len, sms,
                                   config.tile_n, fp8=fp8) for name, s in STRATEGIES.items()}
    res: dict[str, Any] = {
        "case": spec.label, "table": spec.name, "source": tab.get("source", ""),
        "num_seqs": len(b.lens), "total_tokens": sum(b.lens),
        "keys_read": keys_read(b.lens, spec.window), "max_len": max_len, "dtype": spec.dtype,
        "kv_dtype": spec.kv_dtype or spec.dtype, "window": spec.window,
        "heads": f"{spec.num_q_heads}/{spec.num_kv_heads}x{spec.head_dim}",
        "block_size": block_size, "num_blocks": tab["num_blocks"],
        "distinct_blocks": len({x for r in tab["block_tables"] for x in r}),
        "copies": len(b.kv), "bytes": nbytes, "num_splits": picks["new"],
        "config": list(config)}
    k_scale, v_scale = spec.scales
    kw = {"sliding_window": spec.window, "k_scale": k_scale, "v_scale": v_scale}

    def kernel(i: int, strategy: str = "new", cfg=config, p: int | None = None) -> torch.Tensor:
        kv = b.kv[i]
        return paged_decode(b.q[i], kv[:, 0], kv[:, 1], b.block_tables, b.seq_lens,
                            num_splits=p or picks[strategy], strategy=STRATEGIES[strategy],
                            config=cfg, out=b.out[i], **kw)

    def launches(**how) -> list:
        return [lambda i=i: kernel(i, **how) for i in range(len(b.kv))]

    # Correctness first, on the device: both strategies against the reference (and SDPA).
    ref = paged_decode_reference(b.q[0], b.kv[0][:, 0], b.kv[0][:, 1], b.block_tables,
                                 b.seq_lens, **kw).float()
    errs = {name: (kernel(0, name).float() - ref).abs().max().item() for name in STRATEGIES}
    out = kernel(0).float()
    res["max_err_vs_reference"] = max(errs.values())
    res["correct"] = bool(res["max_err_vs_reference"] <= 2e-2 and torch.isfinite(out).all())
    baselines = not fp8 and not spec.window
    mask = length_mask(b.lens, device) if baselines else None
    if baselines:
        via_sdpa = sdpa(b.q[0], *gather_kv(b, 0, block_size), mask).float()
        res["max_err_vs_sdpa"] = (out - via_sdpa).abs().max().item()
        del via_sdpa
    del ref, out   # free them before timing

    if sweep:
        tried = [{"config": list(c), **_timed(launches(cfg=LaunchConfig(*c)), nbytes)}
                 for c in SWEEP]
        res["sweep"] = tried
        ok = [x for x in tried if "time_us" in x]
        if ok:
            config = LaunchConfig(*min(ok, key=lambda x: x["time_us"])["config"])
            res["config"] = list(config)
    res["strategies"] = {}
    for name, strategy in STRATEGIES.items():
        p = picks[name]
        alts = [{"num_splits": n, **_timed(launches(strategy=name, p=n), nbytes)}
                for n in sorted({max(1, p // 2), p, min(128, p * 2)})]
        chosen = next(a for a in alts if a["num_splits"] == p)
        res["strategies"][name] = {"rule": strategy.rule, "merge": strategy.merge,
                                   "num_splits": p, **{k: v for k, v in chosen.items()
                                                       if k != "num_splits"},
                                   "split_sweep": alts}
    new = res["strategies"]["new"]
    res["triton"] = {k: new[k] for k in ("time_us", "gbps", "timing") if k in new}
    if small_grid and picks["new"] > 1:
        grid = []
        for c in SMALL_GRID_SWEEP:
            for n in sorted({max(2, picks["new"] // 2), picks["new"], picks["new"] * 2}):
                for name in STRATEGIES:
                    grid.append({"config": list(c), "num_splits": n, "merge":
                                 STRATEGIES[name].merge, **_timed(launches(
                                     strategy=name, cfg=LaunchConfig(*c), p=n), nbytes)})
        res["small_grid_sweep"] = grid
    try:
        res["read_same_bytes"] = read_at_size(nbytes, device)
    except Exception as err:  # noqa: BLE001 - a reference number must not lose the case
        res["read_same_bytes"] = {"error": str(err).splitlines()[0][:200]}
    if baselines:
        res["gather_sdpa"] = _timed([lambda i=i: sdpa(b.q[i], *gather_kv(b, i, block_size), mask)
                                     for i in range(len(b.kv))], nbytes)
        contig = [gather_kv(b, i, block_size) for i in range(len(b.kv))]
        contig = [(k.transpose(1, 2).contiguous().transpose(1, 2),
                   v.transpose(1, 2).contiguous().transpose(1, 2)) for k, v in contig]
        res["sdpa_contig"] = _timed([lambda i=i: sdpa(b.q[i], *contig[i], mask)
                                     for i in range(len(b.kv))], nbytes)
    return res
