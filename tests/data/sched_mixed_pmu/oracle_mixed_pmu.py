# ruff: noqa
"""Dev tool (not a test, not run by CI): ../sched_chunked_mixed/oracle_chunked_mixed.py (the
oracle's `sched.py` step loop over KV cache groups of their own block sizes, built by
../oracle_mixed.py) with a config line's `prefix_match_unit` given to vLLM's CacheConfig
(vLLM's `--prefix-match-unit`), as ../sched_mamba_mixed_pmu/with_unit.py gives it to the Mamba
oracles; sched.py refuses the key, so it is held back from its check and put in the config.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_mixed_pmu/oracle_mixed_pmu.py IN.trace.jsonl=OUT.expected.jsonl ...

Nothing of vLLM is changed: its `resolve_kv_cache_block_sizes` takes the unit as the hash
block (refusing one no group's block is a multiple of), its coordinator decides partial hash
hits and its managers register and look up what they do.
"""

import functools
import json
import sys
import tempfile
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(DATA))
import oracle_mixed  # noqa: E402

chunked = oracle_mixed.load("oracle_chunked_mixed",
                            DATA / "sched_chunked_mixed" / "oracle_chunked_mixed.py")
oracle = chunked.oracle
UNIT = [None]

inner_read, inner_build = oracle.read_input, oracle_mixed.build


def read_input(path: str):
    with open(path) as f:
        first = json.loads(f.readline())
        rest = f.read()
    UNIT[0] = first["config"].pop("prefix_match_unit", None)
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as tmp:
        tmp.write(json.dumps(first) + "\n" + rest)
        tmp.flush()
        return inner_read(tmp.name)


def build(cfg: dict, *args, **kwargs):
    import vllm.config

    real = vllm.config.CacheConfig
    # (oracle_mixed.build imports CacheConfig from vllm.config when it runs)
    vllm.config.CacheConfig = functools.partial(real, prefix_match_unit=UNIT[0])
    try:
        return inner_build(cfg, *args, **kwargs)
    finally:
        vllm.config.CacheConfig = real


oracle.read_input = read_input
oracle_mixed.build = build


if __name__ == "__main__":
    sys.exit(chunked.main())
