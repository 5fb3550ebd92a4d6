# ruff: noqa
"""Dev tool (not a test): random scheduler traces over the KV cache groups vLLM 0.33's planner
builds for a small IQuest Loop model (../refused_lifted/tiny-iquest-loop3.config.json: 3 layers
run 3 times, a full group then two sliding groups of 32 tokens), for
../sched_chunked_mixed/oracle_chunked_mixed.py.

    R=~/.cache/vllm-oracle
    PYTHONPATH=$R/src:. VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_iquest/make_iquest.py OUT_DIR FIRST LAST      # seeds FIRST..LAST-1

The per-layer specs are kvcli's (`read_hf_config`, `layer_specs` at block 16: ../refused_lifted/
proves them equal to vLLM's built class, in its registration order); the groups are vLLM's own
`get_kv_cache_groups` over them, into the config line's `groups`. The draws are
../sched_dory/make_dory.py's (its `trace` over this model): prefix caching on 3 in 5, sync or
async, max_model_len 256 or 384, a pool from what one max_model_len request needs to 40 blocks
more.
"""

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODEL = HERE.parent / "refused_lifted" / "tiny-iquest-loop3.config.json"
_spec = importlib.util.spec_from_file_location(
    "make_dory", HERE.parent / "sched_dory" / "make_dory.py")
make_dory = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_dory)


def trace(seed: int) -> tuple[str, list[str]]:
    return make_dory.trace(seed, MODEL, "iquest")


if __name__ == "__main__":
    make_dory.make_spec_mamba.write_traces(trace, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
