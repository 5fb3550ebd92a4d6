# ruff: noqa
"""Dev tool (not a test, not run by CI): vLLM 0.33.0's real schedulers with speculative
decoding, partial hash hits and the opt-in shared-prefix Mamba checkpoint
(`CacheConfig.enable_mamba_shared_prefix_checkpoint`), step by step.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_spec_junction/oracle_junction.py [--mtp] [--off] IN.trace.jsonl=OUT.expected.jsonl ...

The trace is ../sched_spec_pmu/oracle_spec_pmu.py's with one more config key,
`"enable_mamba_shared_prefix_checkpoint": true`. Nothing is copied: this imports
oracle_spec_pmu.py (which runs ../sched_spec_mamba/oracle_spec_mamba.py and asserts partial hash
hits) and runs its `main`, after

- taking the key off the config line before ../oracle_mamba.py's `read_trace` (the oracle's
  sched.py knows no such key) and keeping it for the build;
- setting it on the VllmConfig's CacheConfig just before `Scheduler.__init__` reads it
  (scheduler.py:367: handed to the KVCacheManager), `False` with `--off` (the same case with
  the option off, vLLM's default);
- asserting, after the build, that vLLM's scheduler read the value
  (`cache_config.enable_mamba_shared_prefix_checkpoint`) and, with it on, that both sides of
  the feature are on: `Scheduler.mamba_shared_prefix_checkpoint` (scheduler.py:461) and every
  MambaManager's `shared_prefix_checkpoint` (kv_cache_manager.py:194-197). A case where vLLM's
  predicate is false is refused (an error line): make_junction.py draws none.
"""

import importlib.util
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OFF = "--off" in sys.argv[1:]
KEY = "enable_mamba_shared_prefix_checkpoint"
if OFF:
    sys.argv.remove("--off")     # (oracle_spec_mamba reads --mtp from sys.argv)

_spec = importlib.util.spec_from_file_location(
    "oracle_spec_pmu", HERE.parent / "sched_spec_pmu" / "oracle_spec_pmu.py")
pmu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pmu)           # exits with its message when ORACLE_TOOL is unset
sm = pmu.sm
oracle_mamba = sm.oracle_mamba

from vllm.v1.core.sched.scheduler import Scheduler  # noqa: E402
from vllm.v1.core.single_type_kv_cache_manager import MambaManager  # noqa: E402

_flag = {"on": False}
_real_read = oracle_mamba.read_trace
_real_init = Scheduler.__init__
_pmu_build = sm.oracle.build_scheduler


def read_trace(path: str):
    """oracle_mamba's `read_trace` of the trace less the key, the key kept in `_flag`."""
    with open(path) as f:
        lines = f.read().splitlines()
    first = json.loads(lines[0])
    value = first["config"].pop(KEY, False)
    if not isinstance(value, bool):
        raise SystemExit(f"{path}: line 1: config.{KEY} must be true or false")
    _flag["on"] = value and not OFF
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as tmp:
        tmp.write("\n".join([json.dumps(first), *lines[1:]]) + "\n")
        tmp.flush()
        return _real_read(tmp.name)


def init(self, *args, **kw):
    kw["vllm_config"].cache_config.enable_mamba_shared_prefix_checkpoint = _flag["on"]
    _real_init(self, *args, **kw)


def build_scheduler(cfg: dict, async_scheduling: bool = False):
    built = _pmu_build(cfg, async_scheduling)
    sched = built[0]
    on = _flag["on"]
    assert sched.cache_config.enable_mamba_shared_prefix_checkpoint is on
    mambas = [m for m in sched.kv_cache_manager.coordinator.single_type_managers
              if isinstance(m, MambaManager)]
    assert mambas
    if on and not sched.mamba_shared_prefix_checkpoint:
        raise SystemExit("vLLM's predicate is false here (no EAGLE group, no partial hash "
                         "hits, or a re-prefill tail): the option changes nothing")
    assert sched.mamba_shared_prefix_checkpoint is on
    assert sched.kv_cache_manager.mamba_shared_prefix_checkpoint is on
    assert all(m.shared_prefix_checkpoint is on for m in mambas)
    return built


oracle_mamba.read_trace = read_trace
Scheduler.__init__ = init
sm.oracle.build_scheduler = build_scheduler


if __name__ == "__main__":
    sys.exit(sm.main())
