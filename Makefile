# kvcli: `make demo` replays a shipped sample, `make test` runs the tests.
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: install bytecode demo test test-pure test-compiled compiled lint bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch is pinned: 2.13.0 is a local CPU wheel here; an unpinned torch pulls a CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev,kernels,plot,live,ray]'
	$(MAKE) --no-print-directory bytecode
	touch $(STAMP)

# An editable install is not byte-compiled (pip compiles what it copies, and an editable install
# copies nothing): every start would parse kvcore's and kvcli's sources again where Python may
# not write its cache (PYTHONDONTWRITEBYTECODE): ~5% of a short replay. Stale files are
# recompiled on import as usual.
bytecode:
	$(BIN)/python -m compileall -q kvcore kvcli > /dev/null

demo: install
	$(BIN)/kvcli replay traces/multiturn-chat.jsonl --block-size 16 --num-blocks 2048
	$(BIN)/kvcli stats traces/multiturn-chat.jsonl --block-size 16 --num-blocks 2048

# The tests run on the pure-Python stack (the reference), then on the compiled build.
test: test-pure test-compiled

test-pure: install
	$(BIN)/python -m pytest

test-compiled: compiled
	KVCLI_TEST_COMPILED=1 $(BIN)/python -m pytest -m "not pure_python"

# Optional: the hot modules compiled by mypyc from the same source (kvcore/compiled.py); kvcore
# uses the build while it matches the sources, KVCLI_PURE=1 turns it off.
compiled: install
	$(BIN)/python compiled/build.py
	$(MAKE) --no-print-directory bytecode

lint: install
	$(BIN)/ruff check kvcore kvcli kernels tests benchmarks
	$(BIN)/mypy  # all of kvcore, kvcli and kernels: pyproject.toml's [tool.mypy] files

bench: install
	$(BIN)/kvcli bench

clean:
	rm -rf $(VENV) build compiled/lib *.egg-info
