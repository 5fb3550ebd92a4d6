# ruff: noqa
"""Dev tool (not a test, not run by CI): ../sched_mamba_mixed_pmu/with_unit.py's `mixed` oracle
(../sched_mamba_mixed/oracle_mamba_mixed.py with the unit given to vLLM's CacheConfig) taking
"chunked_local" groups too (its trace check lists the group types it takes; ../oracle_mixed.py
builds a chunked local spec at its block). Nothing of vLLM changes.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_mamba_window_pmu/with_chunked.py [--async] IN.trace.jsonl=OUT.expected.jsonl ...
"""

import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(DATA))
import oracle_mixed  # noqa: E402

with_unit = oracle_mixed.load("with_unit", DATA / "sched_mamba_mixed_pmu" / "with_unit.py")
mixed = with_unit.patched("mixed")
mixed.TYPES = ("full", "sliding_window", "mamba", "chunked_local")

if __name__ == "__main__":
    sys.exit(mixed.oracle_mamba.main())
