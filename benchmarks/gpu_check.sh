#!/usr/bin/env bash
# One call on a GPU machine (an H200: torch 2.11, Triton 3.6, Python 3.12, no network), about
# 5 minutes, every part under its own timeout and all under DEADLINE seconds (default 540, for a
# 600 s command limit); a part that fails or times out does not stop the others.
#
#   1. the sm_90 compile report with this machine's Triton (kernels.aot; CPU only, in the
#      background while the device check runs)
#   2. the device correctness matrix (kernels.checks.device_specs: fp8, windows, both merges)
#   3. the shape benchmark (kernels.bench): every case in bf16 and fp8, window cases, the new and
#      old split strategies side by side, the launch-config and small-grid sweeps
#   4. kvcli itself, installed from the carried wheelhouse (benchmarks/gpu_wheelhouse.sh; carry
#      `wheelhouse`), replaying the first CONV_REQUESTS requests of the Mooncake conversation
#      trace and timing SAMPLE_STEPS of its decode steps on their own block tables
#   5. the same with gpt-oss-20b's groups (sliding window 128 beside full attention), fewer steps
#   6. a summary: per case the better strategy and whether every bf16 case reached 90% of copy
#
# With $OUT set, writes there: log.txt, aot.json, device_check.json, gpu_bench.json,
# gpu_steps.json, gpu_steps_gpt-oss-20b.json, summary.txt. Exit 0 when every part passed.
set -u
cd "$(dirname "$0")/.."
REPO="$PWD"
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
OUT="${OUT:-$(mktemp -d)}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
DEADLINE="${DEADLINE:-540}"
CONV_REQUESTS="${CONV_REQUESTS:-1000}"
SAMPLE_STEPS="${SAMPLE_STEPS:-24}"
LOG="$OUT/log.txt"
status=0
exec > >(tee -a "$LOG") 2>&1

left() { echo $(( DEADLINE - SECONDS )); }
# part NAME TIMEOUT CMD...: run with min(TIMEOUT, time left), report rc and seconds
part() {
  local name="$1" limit="$2"; shift 2
  local t; t=$(left)
  [ "$t" -lt "$limit" ] && limit="$t"
  if [ "$limit" -le 5 ]; then echo "== $name: skipped (deadline)" >&2; status=1; return 1; fi
  echo "== $name (limit ${limit} s)" >&2
  local start=$SECONDS
  timeout "$limit" "$@"
  local rc=$?
  echo "== $name: rc=$rc ($((SECONDS - start)) s)" >&2
  [ $rc -ne 0 ] && status=1
  return $rc
}

"$PY" - <<'PY'
import sys, torch, triton
print(f"python {sys.version.split()[0]}, torch {torch.__version__}, triton {triton.__version__}, "
      f"cuda {torch.version.cuda}, device: "
      f"{torch.cuda.get_device_name() if torch.cuda.is_available() else 'none'}", flush=True)
PY
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>/dev/null

# 1 (background: compiles only, no GPU time measured)
( env -u TRITON_INTERPRET TRITON_DEFAULT_FP_FUSION=1 timeout 150 "$PY" -m kernels.aot --json \
    > "$OUT/aot.json" 2> "$OUT/aot.err"; echo "== aot: rc=$? (background)" ) &
AOT=$!

part "device correctness (kernels.checks.device_specs)" 150 \
  "$PY" -m kernels.bench --check > "$OUT/device_check.json"
[ -s "$OUT/device_check.json" ] && "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print('checked', d['checked'], 'failed', d['failed'], 'worst', d['worst']); [print('FAIL', f) for f in d['failures']]" "$OUT/device_check.json"
wait $AOT

part "shape benchmark (kernels.bench: bf16 + fp8 + windows, new and old strategies)" 220 \
  "$PY" -m kernels.bench --no-check --out "$OUT/gpu_bench.json"

# 4-5: kvcli from the wheelhouse (pip --target: the image's python3 is a venv itself)
SITE=/tmp/kvcli-site
if [ -d "$REPO/wheelhouse" ]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" "$REPO"/wheelhouse/*.whl || { echo "wheelhouse install failed"; status=1; }
else
  echo "no wheelhouse/ (bash benchmarks/gpu_wheelhouse.sh, then carry it): kvcli parts skipped"
  status=1
fi
TRACE=/tmp/conversation_first_${CONV_REQUESTS}.jsonl
gzip -dc "$REPO/tests/data/traces/mooncake/conversation_trace.jsonl.gz" | head -n "$CONV_REQUESTS" > "$TRACE"
# the installed wheel, not the checkout: run from /tmp with only the target on the path
KVCLI=(env -C /tmp PYTHONPATH="$SITE" "$PY" -m kvcli)
if [ -d "$SITE/kvcli" ]; then
  part "kvcli bench --gpu --trace (first $CONV_REQUESTS conversation requests, $SAMPLE_STEPS steps)" 130 \
    "${KVCLI[@]}" bench --gpu --trace "$TRACE" --sample-steps "$SAMPLE_STEPS" --json \
    > "$OUT/gpu_steps.json"
  part "kvcli bench --gpu --trace --model gpt-oss-20b (8 steps)" 80 \
    "${KVCLI[@]}" bench --gpu --trace "$TRACE" --model gpt-oss-20b --sample-steps 8 --json \
    > "$OUT/gpu_steps_gpt-oss-20b.json"
fi

# 6
"$PY" - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        return json.load(open(os.path.join(out, name)))
    except (OSError, ValueError):
        return None
bench = load("gpu_bench.json")
if bench:
    print(f"copy bandwidth {bench['copy_bytes_per_s'] / 1e9:.0f} GB/s")
    print(f"{'case':>16} {'kv':>4} {'new %':>6} {'old %':>6} {'new sp':>6} {'old sp':>6}  best")
    worst = {}
    for c in bench["cases"]:
        if "error" in c:
            print(f"{c['case']:>16} error: {c['error']}")
            continue
        s = c["strategies"]
        pct = {k: s[k].get("pct_copy", 0.0) for k in ("new", "old")}
        best = max(pct, key=pct.get)
        # the best of everything timed for the case (strategies, their split sweeps, small grid)
        grid = [g.get("time_us") for g in c.get("small_grid_sweep", []) if "time_us" in g]
        grid += [a.get("time_us") for k in s for a in s[k]["split_sweep"] if "time_us" in a]
        top = 100 * c["bytes"] / (min(grid) * 1e-6) / bench["copy_bytes_per_s"] if grid else 0
        print(f"{c['case']:>16} {c['kv_dtype']:>4} {pct['new']:6.1f} {pct['old']:6.1f} "
              f"{s['new']['num_splits']:6d} {s['old']['num_splits']:6d}  {best}"
              f" (best timed anywhere: {top:.1f}%)")
        if c["kv_dtype"] == "bf16":
            for k in pct:
                worst[k] = min(worst.get(k, 1e9), pct[k])
    for k, v in worst.items():
        print(f"bf16, strategy {k}: lowest % copy over the cases {v:.1f} "
              f"({'>= 90: done' if v >= 90 else 'below 90'})")
for name in ("gpu_steps.json", "gpu_steps_gpt-oss-20b.json"):
    d = load(name)
    if d:
        print(f"{name}: {len(d['steps'])} of {d['decode_steps']} decode steps")
        for kv, by in d["summary"].items():
            for strat, v in by.items():
                print(f"  {kv} {strat}: {v['kernels']} kernels, {v['pct_copy']:.1f}% of copy "
                      f"overall, median {v['pct_copy_median']:.1f}, min {v['pct_copy_min']:.1f}")
PY
echo "== done in $SECONDS s, status $status"
exit $status
