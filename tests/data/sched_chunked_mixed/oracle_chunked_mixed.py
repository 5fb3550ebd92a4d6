# ruff: noqa
"""Dev tool (not a test, not run by CI): vLLM 0.33.0's schedulers, without drafts, over KV
cache groups of different block sizes (a chunked local attention group among them), step by
step.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_chunked_mixed/oracle_chunked_mixed.py IN.trace.jsonl=OUT.expected.jsonl ...

The trace is the oracle's `sched.py` trace with `groups` (full, sliding_window, chunked_local),
each group with its own `block_size`. What runs is sched.py's own step loop (`run`, or
`run_async` by the config line, through ../oracle_batch.py's `answer`), with its
`build_scheduler` replaced by ../oracle_mixed.py's `build`: sched.py's construction with these
differences, the ones ../sched_spec_eagle_mixed/oracle_eagle_mixed.py makes for its drafts:

- each group's spec at its own block size, every page one size as vLLM's planning makes them
  (`unify_kv_cache_spec_page_size`: a group's head size is the lcm / its block; asserted);
- vLLM's own `resolve_kv_cache_block_sizes` gives the scheduler block (the lcm of the groups')
  and the hash block (their gcd, or the scheduler block with prefix caching off), passed to
  the Scheduler and the block hasher as EngineCore passes them (core.py);
- the start-up check (`_check_enough_kv_cache_memory`, one max_model_len request in
  num_blocks - 1 pages) over those groups, refused as vLLM refuses it.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from oracle_batch import answer, oracle  # noqa: E402  (exits without $ORACLE_TOOL)
import oracle_mixed  # noqa: E402


def main() -> int:
    oracle.build_scheduler = oracle_mixed.build      # the loop is sched.py's, the build ours
    rc = 0
    for pair in sys.argv[1:]:
        inp, outp = pair.split("=", 1)
        cfg, reqs = oracle.read_input(inp)
        try:
            rc = answer(inp, outp, cfg, reqs) or rc
        except SystemExit as err:       # (the start-up check above: not an Exception)
            with open(outp, "w") as out:
                out.write(json.dumps({"error": f"SystemExit: {err}"}) + "\n")
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
