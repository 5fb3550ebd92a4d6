#!/usr/bin/env bash
# Build a wheelhouse that lets kvcli run on a GPU machine that has torch, Triton and numpy but
# none of kvcli's other dependencies at the versions kvcli needs (the H200 image: Python 3.12,
# x86_64, no network; it lacks orjson, cbor2 and pydantic, and its typer is not 0.29).
#
#   bash benchmarks/gpu_wheelhouse.sh [OUT_DIR [PYTHON_VERSION]]    # default: wheelhouse 3.12
#   bash benchmarks/gpu_wheelhouse.sh --kvcli-only OUT_DIR          # kvcli's wheel alone (offline)
#
# OUT_DIR gets kvcli's own wheel (pure Python; kvcore, kvcli, kernels and the shipped block
# tables) and binary-only wheels of kvcli's dependencies, resolved for that Python on manylinux
# x86_64, minus what the GPU image provides (GPU_PROVIDES). About 5.5 MB. On the GPU machine:
#
#   python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site OUT_DIR/*.whl
#   PYTHONPATH=/tmp/site python3 -m kvcli bench --gpu --trace TRACE
#
# (--target, not a venv: the image's python3 is itself a venv, so a --system-site-packages venv
# made from it would not see its torch.) Needs pip and network here; `wheelhouse/` is git-ignored.
set -euo pipefail
cd "$(dirname "$0")/.."
KVCLI_ONLY=0
if [ "${1:-}" = "--kvcli-only" ]; then KVCLI_ONLY=1; shift; fi
OUT="${1:-wheelhouse}"
PYV="${2:-3.12}"
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi

kvcli_wheel() {
  # A pure wheel built from a copy of the sources (the build's build/ and egg-info stay out of
  # the checkout), without its dependencies and without network (this Python's setuptools).
  local src
  src="$(mktemp -d)"
  cp -r pyproject.toml README.md kvcore kvcli kernels "$src/"
  find "$src" -name __pycache__ -prune -exec rm -rf {} +
  "$PY" -m pip wheel -q --no-deps --no-build-isolation -w "$1" "$src"
  rm -rf "$src"
}

if [ "$KVCLI_ONLY" = 1 ]; then
  mkdir -p "$OUT"
  kvcli_wheel "$OUT"
  exit 0
fi
# kvcli's dependencies that the GPU image already has at a version kvcli accepts (torch needs
# numpy); everything else in pyproject.toml's [project] dependencies travels, with its own
# dependencies as pip resolves them for the target Python.
GPU_PROVIDES="numpy"

mapfile -t DEPS < <("$PY" - "$GPU_PROVIDES" <<'PY'
import re, sys, tomllib
skip = set(sys.argv[1].split())
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
for d in deps:
    name = re.split(r"[<>=!~ ;\[]", d.strip(), maxsplit=1)[0].lower()
    if name not in skip:
        print(d.split("#")[0].strip())
PY
)
rm -rf "$OUT"
mkdir -p "$OUT"
echo "dependencies for Python $PYV (manylinux x86_64): ${DEPS[*]}" >&2
"$PY" -m pip download -q --only-binary=:all: --python-version "$PYV" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$OUT" "${DEPS[@]}"
kvcli_wheel "$OUT"
ls -l "$OUT" >&2
du -sh "$OUT" >&2
