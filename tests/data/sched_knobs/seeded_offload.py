"""Dev tool (not a test): the oracle's `sched_offload.py` with NONE_HASH's seed fixed at "0".

    PYTHONHASHSEED=0 VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_knobs/seeded_offload.py ORACLE_TOOL_DIR/sched_offload.py ARGS...

`sched_offload.py` drops `PYTHONHASHSEED` before vLLM reads it (so that its answers keep vLLM's
fixed seed), which leaves an xxhash case's keys seeded at random: no replay can match them. This
runs it unchanged but for vLLM's seed resolution, which answers "0", as vLLM 0.33 does for a
server started with `PYTHONHASHSEED=0`; the trace then says `"hash_seed": "0"`.
"""

import os
import runpy
import sys

if "VLLM_ORACLE_SRC" not in os.environ or len(sys.argv) < 2:
    sys.exit("seeded_offload: set VLLM_ORACLE_SRC (the oracle's vLLM source) and name the "
             "oracle's sched_offload.py (in its tool folder), as the docstring says")
os.environ["_SCHED_OFFLOAD_HASHSEED"] = "1"      # it is already 0: no re-exec
sys.path.insert(0, os.environ["VLLM_ORACLE_SRC"])
from vllm.v1.core import kv_cache_utils

kv_cache_utils.resolve_none_hash_seed = lambda hash_fn: "0"
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
