"""The one script a session with a GPU runs for issue 15 part 3: calibrate, then check.

For each model (default: llama-3.1-8b and qwen3-8b, bf16, tp 1) it runs `kvcli calibrate
--gpu`'s measurements (the full grid, about two minutes), writes the calibration file, then
times held-out synthetic forward steps (`kvcli/calibration/forward_step.py`: the model's layers
with random weights, decodes on kvcore-made paged KV) and prints the calibrated clock's MAPE per
regime (decode-heavy, prefill-heavy, mixed). Files go to --out-dir (default $OUT or ./out):
calibration-<model>.json and check-<model>.json. Sized for about 3 minutes a model on an
H100/H200; exit 3 without CUDA.

    python benchmarks/calibration_check.py [--models llama-3.1-8b,qwen3-8b] [--out-dir DIR]
    TRITON_INTERPRET=1 python benchmarks/calibration_check.py --device cpu --grid tiny \
        --model-config tests/data/calibration/tiny-llama.config.json   # the CPU smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _write(path: Path, doc: dict) -> None:
    """Written whole or not at all (a killed run leaves no half file)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    from kvcli.calibration.check import check
    from kvcli.calibration.run import calibrate
    from kvcore.clock.registry import model_geometry
    from kvcore.errors import InputError, NoDeviceError

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="llama-3.1-8b,qwen3-8b")
    ap.add_argument("--model-config", help="one HF config.json instead of --models")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--grid", default="full", help="full, or tiny (the CPU smoke run)")
    ap.add_argument("--out-dir", default=os.environ.get("OUT") or "out")
    args = ap.parse_args(argv)

    def log(s: str) -> None:
        print(s, file=sys.stderr, flush=True)

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = []
    try:
        models = ([model_geometry(None, args.model_config)] if args.model_config else
                  [model_geometry(m, None) for m in args.models.split(",")])
        for g in models:
            assert g is not None
            t0 = time.time()
            doc = calibrate(g, device_name=args.device, grid=args.grid, tp=1, block_size=16,
                            log=log)
            cal = out / f"calibration-{g.name}.json"
            _write(cal, doc)
            log(f"{g.name}: calibrated in {time.time() - t0:.0f} s: LOO MAPE "
                f"{doc['fit']['loo_mape_pct']}, undetermined {doc['fit']['undetermined']}")
            t0 = time.time()
            res = check(g, str(cal), device_name=args.device,
                        steps="tiny" if args.grid == "tiny" else "full", log=log)
            _write(out / f"check-{g.name}.json", res)
            log(f"{g.name}: checked in {time.time() - t0:.0f} s")
            summary.append((g.name, doc, res))
    except NoDeviceError as err:
        print(f"error: {err}", file=sys.stderr)
        return 3
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for name, doc, res in summary:
        print(f"{name} on {doc['gpu']['name']}: factors "
              + ", ".join(f"{k} {v:.3g}" for k, v in doc["factors"].items()
                          if isinstance(v, float)))
        for regime, r in res["regimes"].items():
            print(f"  {regime:14s} MAPE {r['mape_pct']:6.1f}%  MPE {r['mpe_pct']:+6.1f}%  "
                  f"({len(r['steps'])} held-out steps)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
