# ruff: noqa
"""Dev tool (not a test, not run by CI): vLLM 0.33.0's Scheduler and AsyncScheduler over Mamba
groups in "align" mode beside a chunked local attention group (and full-attention or
sliding-window groups), each at its own block size, with the config line's `prefix_match_unit`
given to vLLM's CacheConfig, no drafts, step by step.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_chunked_mamba/oracle_chunked_mamba.py [--async] IN.trace.jsonl=OUT.expected.jsonl ...

What runs is ../sched_mamba_mixed_pmu/with_unit.py's `patched("mixed")` (the oracle of
../sched_mamba_mixed/oracle_mamba_mixed.py with the unit passed to vLLM), unchanged but for the
group types its trace check lets through: "chunked_local" too (../oracle_mixed.py's
`group_specs` builds vLLM's ChunkedLocalAttentionSpec from a group's `attention_chunk_size`).
An exception vLLM raises mid-run (its chunked manager's assertion) is the case's last line.
"""

import importlib.util
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "with_unit", Path(__file__).resolve().parent.parent / "sched_mamba_mixed_pmu" / "with_unit.py")
with_unit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(with_unit)


if __name__ == "__main__":
    oracle = with_unit.patched("mixed")
    oracle.TYPES = ("full", "sliding_window", "mamba", "chunked_local")
    sys.exit(oracle.oracle_mamba.main())
