"""How well a calibrated clock predicts held-out step times: synthetic forward steps
(`forward_step.py`) in three regimes, measured on the device, against the clock's GPU time
for the same batch (the sum of its kernel groups: no sampler, no CPU terms, which the
synthetic step does not run). MAPE and signed MPE per regime (reference clock.md 7.2).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from kvcore.clock.roofline import RooflineClock

# regime -> steps, each (decode KV lengths, prefill (chunk, computed before))
STEPS: dict[str, dict[str, list[tuple[list[int], list[tuple[int, int]]]]]] = {
    "full": {
        "decode-heavy": [([1025] * 8, []), ([2049] * 32, []), ([4097] * 64, []),
                         ([1025] * 128, []), ([513] * 256, [])],
        "prefill-heavy": [([], [(512, 0)]), ([], [(2048, 0)]), ([], [(4096, 0)]),
                          ([], [(1024, 4096)]), ([], [(2048, 8192)])],
        "mixed": [([2049] * 32, [(512, 0)]), ([1025] * 64, [(1024, 2048)]),
                  ([513] * 128, [(256, 0)]), ([4097] * 16, [(2048, 4096)])],
    },
    "tiny": {
        "decode-heavy": [([24] * 2, []), ([40] * 3, [])],
        "prefill-heavy": [([], [(8, 0)]), ([], [(16, 8)])],
        "mixed": [([24] * 2, [(8, 0)])],
    },
}


def check(g: Any, cal_path: str, *, device_name: str, steps: str, tp: int = 1,
          log: Callable[[str], None] = lambda s: None) -> dict:
    import torch

    from kernels.timing import time_launches
    from kvcli.calibration.forward_step import SyntheticModel
    from kvcli.calibration.run import device_for
    from kvcore.clock.batch import StepBatch
    from kvcore.clock.registry import calibrated_clock

    device = device_for(device_name)
    clock = cast(RooflineClock, calibrated_clock(
        cal_path, model=None, model_config=None, gpu=None, tp=tp, kv_cache_dtype="auto",
        async_scheduling=True, geometry=g))
    torch.manual_seed(1)
    model = SyntheticModel(g, tp=tp, device=device)
    out: dict[str, Any] = {"model": g.name, "calibration": cal_path, "regimes": {}}
    for regime, cases in STEPS[steps].items():
        rows: list[dict[str, Any]] = []
        errs: list[float] = []
        for i, (decodes, prefills) in enumerate(cases):
            step = model.prepare(decodes, prefills, seed=i)
            t, how = time_launches([step], reps=5, per_graph=2)
            batch = StepBatch()
            for c in decodes:
                batch.add(1, c, False)
            for c, x in prefills:
                batch.add(c, c + x, True)
            pred_ms = sum(t.ms for t in clock.timed(batch)) + clock.allreduce_ms(
                batch.num_tokens)
            measured_ms = t * 1e3
            errs.append(100 * (pred_ms - measured_ms) / measured_ms)
            rows.append({"decodes": len(decodes), "decode_kv": sorted(set(decodes)),
                         "prefills": prefills, "measured_ms": measured_ms,
                         "predicted_ms": pred_ms, "timing": how,
                         "error_pct": errs[-1]})
            del step
        out["regimes"][regime] = {"steps": rows,
                                  "mape_pct": sum(abs(e) for e in errs) / len(errs),
                                  "mpe_pct": sum(errs) / len(errs)}
        log(f"{regime}: MAPE {out['regimes'][regime]['mape_pct']:.1f}% over {len(rows)} steps")
    return out
