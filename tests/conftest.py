"""The stack under test: the pure-Python modules (the reference), or with KVCLI_TEST_COMPILED=1
the compiled build (`make compiled`, `kvcore/compiled.py`); `make test` runs both. Tests marked
`pure_python` patch the stack's classes or record their calls, which compiled classes do not
allow: they run on the pure-Python modules only."""

from __future__ import annotations

import os
import signal

import pytest

COMPILED = os.environ.get("KVCLI_TEST_COMPILED", "") not in ("", "0")
if not COMPILED:
    os.environ["KVCLI_PURE"] = "1"      # before kvcore is imported (CLI subprocesses inherit it)
else:
    os.environ.pop("KVCLI_PURE", None)

# A run started in the background by a shell without job control (`sh -c 'make test &'`)
# inherits Ctrl-C ignored, and Python then keeps it ignored: the Ctrl-C tests (and the kvcli
# processes they start, which inherit an ignored signal) need it handled as at a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

from kvcore import compiled

if COMPILED and not compiled.active():
    raise pytest.UsageError(f"KVCLI_TEST_COMPILED=1 but the stack is {compiled.status()}")


def pytest_report_header(config):
    return f"kvcore stack: {compiled.status()}"


def pytest_collection_modifyitems(config, items):
    if not COMPILED:
        return
    skip = pytest.mark.skip(reason="patches or records the stack's Python classes")
    for item in items:
        if item.get_closest_marker("pure_python"):
            item.add_marker(skip)
