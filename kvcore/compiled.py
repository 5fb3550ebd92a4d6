"""The optional compiled stack: the same Python source of kvcore's hot modules, compiled by mypyc.

`make compiled` (`compiled/build.py`) builds the modules in `MODULES` into `compiled/lib/`, with
a manifest of the sources' digests. When kvcore is imported, `install()` puts a finder in front of
the import system that loads those modules from the build instead of their `.py` files, if:

* `KVCLI_PURE` is not set (to anything but empty or 0): the pure-Python modules stay the
  reference, and the call recorder (`kvcore.call_tree`) needs them (it patches Python methods,
  which compiled classes do not allow);
* the build exists and was made from exactly today's sources: a module edited since is a stale
  build, and a stale build is never used (the whole group or none: its modules call each other
  directly).

`status()` says which is in use and why. Outputs are byte-identical either way (the tests run
the oracle, scenario and replay tests both ways: `make test`); only speed differs.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.abc
import importlib.machinery
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "compiled" / "lib"
MANIFEST = LIB / "manifest.json"
# The interpreter a build is for (an extension loads only into the Python it was built for).
PYTHON_TAG = f"{sys.implementation.cache_tag}-{sys.platform}"

# The modules mypyc compiles, by dotted name: the stack (pool, managers, coordinator, partial
# hashes), the scheduler, the sync and async engine loops, block hashing, our event stream and
# the CPU offload tier. A class a module outside this list subclasses cannot be compiled
# (mypyc's native classes take no interpreted subclasses): the tracer protocol (runtime-checked)
# stays Python.
MODULES = (
    "kvcore.block", "kvcore.free_queue", "kvcore.block_hash_map", "kvcore.block_caching",
    "kvcore.block_pool",
    "kvcore.request", "kvcore.kv_cache_blocks", "kvcore.plain_step", "kvcore.quiet_steps",
    "kvcore.prefix_cache_control", "kvcore.kv_cache_manager", "kvcore.lookup_memo",
    "kvcore.coordinator", "kvcore.hybrid_coordinator", "kvcore.coordinator_choice",
    "kvcore.managers.tables", "kvcore.managers.base", "kvcore.managers.full_attention",
    "kvcore.managers.sliding_window", "kvcore.managers.chunked_local",
    "kvcore.managers.cross_attention", "kvcore.managers.mamba", "kvcore.managers.mamba_checkpoint",
    # (vLLM 0.33's newer kinds: they subclass compiled managers, so they must be compiled too)
    "kvcore.managers.circular_buffer", "kvcore.managers.rswa",
    "kvcore.managers.mamba_retention", "kvcore.managers.mamba_caching",
    # partial hash hits (`--prefix-match-unit`): the compiled pool and managers call them
    "kvcore.partial_hashes", "kvcore.managers.fine_lookup", "kvcore.managers.fine_full_attention",
    "kvcore.managers.mamba_partial",
    "kvcore.engine.queues", "kvcore.engine.decode_windows", "kvcore.engine.scheduler",
    "kvcore.engine.scheduler_update", "kvcore.engine.scheduler_waiting",
    "kvcore.engine.scheduler_release",
    "kvcore.engine.deferred_frees", "kvcore.engine.mamba_split",
    # block hashing (a decode block's hash is one call per block: interpreted, its overhead
    # was twice the pickle and sha256 it wraps)
    "kvcore.hashing", "kvcore.engine.hash_memo", "kvcore.engine.prompt_prefixes",
    "kvcore.engine.engine_loop", "kvcore.engine.arrivals", "kvcore.engine.batch_time",
    "kvcore.engine.replay_observer", "kvcore.engine.async_loop",
    "kvcore.engine.fake_model", "kvcore.engine.lazy_request", "kvcore.engine.fast_forward",
    # our event stream (a line per block operation: interpreted, the recorder and the sink
    # were a quarter of a replay with events)
    "kvcore.engine.events", "kvcore.engine.hash_json", "kvcore.engine.recorder",
    # the CPU offload tier (per chunk work as hot as the pool's per block)
    "kvcore.engine.scheduler_offload", "kvcore.offload.keys", "kvcore.offload.policy",
    "kvcore.offload.lru", "kvcore.offload.idle_runs", "kvcore.offload.arc", "kvcore.offload.access",
    "kvcore.offload.manager", "kvcore.offload.manager_reports",
    "kvcore.offload.jobs", "kvcore.offload.connector", "kvcore.offload.completions",
    "kvcore.offload.stores", "kvcore.offload.eagle",
    "kvcore.offload.worker",
    "kvcore.offload.record", "kvcore.offload.config", "kvcore.offload.tier",
    "kvcore.offload.tier_outputs",
    # (over several groups: `HybridConnector` subclasses the compiled connector)
    "kvcore.offload.hybrid", "kvcore.offload.hybrid_lookup", "kvcore.offload.hybrid_stores",
    "kvcore.offload.hybrid_groups", "kvcore.offload.final_tail",
    "kvcore.offload.hybrid_partial",
)

# Native kernels (Cython, built alongside): module -> its .pyx and the .pxi files it includes,
# beside it. They have no .py: without a fresh build, importing one fails and its callers keep
# to the pure path (kvcore/analysis/stats/native_events.py).
NATIVE = {
    "kvcore.analysis.stats.native": ("native.pyx", "native_map.pxi", "native_admit.pxi"),
    "kvcore.engine.native_hash": ("native_hash.pyx", "block_pickle.pxi"),
    "kvcore.engine.native_ahead": ("native_ahead.pyx", "block_pickle.pxi", "pthreads.pxi"),
    "kvcore.engine.native_lines": ("native_lines.pyx", "digits.pxi"),
    "kvcore.engine.native_pipe": ("native_pipe.pyx", "digits.pxi", "segments.pxi",
                                   "pipe_format.pxi", "pipe_pump.pxi", "pthreads.pxi"),
    "kvcore.traces.native_ids": ("native_ids.pyx",),
}

_state = {"status": "pure (not built: make compiled)"}


def source(module: str) -> Path:
    """The module's source: its .py, or a native kernel's .pyx."""
    path = ROOT.joinpath(*module.split("."))
    return path.with_name(NATIVE[module][0]) if module in NATIVE else path.with_suffix(".py")


def digest(module: str) -> str:
    """The sha256 of the module's source (a native kernel's: of its .pyx and .pxi files)."""
    h = hashlib.sha256(source(module).read_bytes())
    for extra in NATIVE.get(module, ())[1:]:
        h.update(source(module).with_name(extra).read_bytes())
    return h.hexdigest()


def unlisted_includes() -> list[str]:
    """Each file a native kernel includes (``include "x.pxi"``, also from its .pxi files) that
    `NATIVE` does not list with it: `digest` would miss it, and an edit to it would leave a
    build that says it is fresh. `compiled/build.py` refuses to build while there is one."""
    out = []
    for module, files in NATIVE.items():
        folder = source(module).parent
        seen: set[str] = set()
        todo = [files[0]]
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo += [line.split('"')[1] for line in (folder / name).read_text().splitlines()
                         if line.startswith('include "')]
        out += [f"{module}: {name}" for name in sorted(seen - set(files))]
    return out


def native(module: str) -> Any:
    """The native kernel ``module`` (one of `NATIVE`) when the compiled build is in use, else
    None (its caller keeps to its Python path)."""
    if not active():
        return None
    return importlib.import_module(module)


def status() -> str:
    """'compiled', or 'pure (why)'."""
    return _state["status"]


def active() -> bool:
    return _state["status"] == "compiled"


class _Finder(importlib.abc.MetaPathFinder):
    """Loads the built extension of each compiled module (and the group's shared library)."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    def find_spec(self, name, path=None, target=None):
        so = self.files.get(name)
        if so is None:
            return None
        return importlib.machinery.ModuleSpec(
            name, importlib.machinery.ExtensionFileLoader(name, str(so)), origin=str(so))


def decide(lib: Path = LIB) -> tuple[str, dict[str, Path]]:
    """The status the build in ``lib`` earns (see the module docstring) and, when it is
    'compiled', the extension file of each module to load."""
    if os.environ.get("KVCLI_PURE", "") not in ("", "0"):
        return "pure (KVCLI_PURE is set)", {}
    try:
        manifest = json.loads((lib / MANIFEST.name).read_text())
    except (OSError, ValueError):
        return "pure (not built: make compiled)", {}
    if manifest.get("python") != PYTHON_TAG:
        return f"pure (built for {manifest.get('python')}, this is {PYTHON_TAG})", {}
    files: dict[str, Path] = {}
    for module in (*MODULES, *NATIVE):
        entry = manifest.get("modules", {}).get(module)
        try:
            fresh = entry is not None and entry["sha256"] == digest(module)
        except OSError:
            fresh = False
        if not fresh:
            return f"pure (stale build: {module} changed since make compiled)", {}
        files[module] = lib / entry["file"]
    shared = manifest.get("shared")
    if shared:
        files[shared["module"]] = lib / shared["file"]
    if not all(p.exists() for p in files.values()):
        return "pure (incomplete build: make compiled)", {}
    return "compiled", files


def install() -> None:
    """Use the build if it may be used; else remember why not (`status()`)."""
    status, files = decide()
    if files:
        sys.meta_path.insert(0, _Finder(files))
    _state["status"] = status
