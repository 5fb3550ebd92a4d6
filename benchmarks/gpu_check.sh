#!/usr/bin/env bash
# One call on a GPU machine: the device correctness matrix, then the decode benchmark.
# Needs only python3 with torch (CUDA) and Triton; nothing is installed. Well under 10 minutes.
# Prints a table; with $OUT set, writes device_check.json, gpu_bench.json and the logs there.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT="${OUT:-}"
dest() { if [ -n "$OUT" ]; then echo "$OUT/$1"; else echo "/dev/null"; fi; }
PY="${PYTHON:-python3}"
status=0

"$PY" - <<'PY'
import sys, torch, triton
print(f"python {sys.version.split()[0]}, torch {torch.__version__}, triton {triton.__version__}, "
      f"cuda {torch.version.cuda}, device: "
      f"{torch.cuda.get_device_name() if torch.cuda.is_available() else 'none'}", flush=True)
PY
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>/dev/null

echo "== device correctness: kernel vs torch reference and float64 (kernels.checks.device_specs)"
start=$SECONDS
timeout 240 "$PY" -m kernels.bench --check > "$(dest device_check.json)" 2> >(tee "$(dest device_check.log)" >&2)
rc=$?
[ -n "$OUT" ] && [ -s "$OUT/device_check.json" ] && "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print('checked', d['checked'], 'failed', d['failed'], 'worst', d['worst']); [print('FAIL', f) for f in d['failures']]" "$OUT/device_check.json"
echo "device check rc=$rc ($((SECONDS - start)) s)"
[ $rc -ne 0 ] && status=1

echo "== benchmark: kernels.bench (tables from kvcore, shipped in kernels/data)"
start=$SECONDS
timeout 360 "$PY" -m kernels.bench --no-check --out "$(dest gpu_bench.json)" 2> >(tee "$(dest gpu_bench.log)" >&2)
rc=$?
echo "benchmark rc=$rc ($((SECONDS - start)) s)"
[ $rc -ne 0 ] && status=1
if [ -n "$OUT" ] && [ -f "$OUT/gpu_bench.json" ]; then
  "$PY" - "$OUT/gpu_bench.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for c in d["cases"]:
    if "sweep" in c:
        print("config sweep on", c["case"], "(tile_n, warps, stages):")
        for s in c["sweep"]:
            print("  ", s)
    if "split_sweep" in c:
        print("split sweep on", c["case"], c["split_sweep"])
PY
fi
exit $status
