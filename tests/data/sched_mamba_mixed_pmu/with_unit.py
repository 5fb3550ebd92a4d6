# ruff: noqa
"""Dev tool (not a test, not run by CI): ../sched_mamba_mixed/oracle_mamba_mixed.py or
../sched_spec_eagle_mixed/oracle_eagle_mixed.py with a config line's `prefix_match_unit` given
to vLLM's CacheConfig (vLLM's `--prefix-match-unit`), as ../oracle_mamba.py gives it; neither
oracle reads the key (sched.py refuses unknown keys).

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_mamba_mixed_pmu/with_unit.py mixed [--async] IN.trace.jsonl=OUT.expected.jsonl ...
    ... with_unit.py eagle_mixed [--mtp] IN.trace.jsonl=OUT.expected.jsonl ...

The oracle runs unchanged; only its `read_trace` (the unit held back from sched.py's check,
then put in the config) and its `build` (vLLM's CacheConfig called with the unit while it
builds) are wrapped. `patched(name)` gives the wrapped oracle module to other dev tools
(../cache_mode_mamba_mixed/oracle_cache_mixed.py).
"""

import functools
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent
ORACLES = {"mixed": DATA / "sched_mamba_mixed" / "oracle_mamba_mixed.py",
           "eagle_mixed": DATA / "sched_spec_eagle_mixed" / "oracle_eagle_mixed.py"}


def patched(name: str):
    spec = importlib.util.spec_from_file_location(f"oracle_{name}", ORACLES[name])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import vllm.config

    inner_read, inner_build = module.read_trace, module.build

    def read_trace(path: str):
        with open(path) as f:
            first = json.loads(f.readline())
            rest = f.read()
        unit = first["config"].pop("prefix_match_unit", None)
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as tmp:
            tmp.write(json.dumps(first) + "\n" + rest)
            tmp.flush()
            cfg, reqs = inner_read(tmp.name)
        if unit is not None:
            cfg["prefix_match_unit"] = unit
        return cfg, reqs

    def build(cfg: dict, *args, **kwargs):
        real = vllm.config.CacheConfig
        # (the build imports CacheConfig from vllm.config when it runs)
        vllm.config.CacheConfig = functools.partial(
            real, prefix_match_unit=cfg.get("prefix_match_unit"))
        try:
            return inner_build(cfg, *args, **kwargs)
        finally:
            vllm.config.CacheConfig = real

    module.read_trace = module.oracle_mamba.read_trace = read_trace
    module.build = module.oracle_mamba.build_mamba_scheduler = build
    return module


if __name__ == "__main__":
    name = sys.argv.pop(1)
    oracle = patched(name)
    sys.exit(oracle.oracle_mamba.main() if name == "mixed" else oracle.spec_mamba.main())
