# ruff: noqa
"""Record the real vLLM 0.33.0 Scheduler's answers for token-id traces whose config line's
"groups" include circular_buffer / rswa groups.

The scheduler oracle (`/work/shared/oracle/tool/sched.py`, `oracle sched`) builds its groups with
the harness's `make_group_specs`, imported when it runs; `record.py` (beside this file) widens
that to the newer specs, so importing it first is all this needs. Each NAME.trace.jsonl gets
NAME.expected.jsonl beside it, as `oracle sched NAME.trace.jsonl` writes (sync or async as its
config line says).

  PYTHONPATH=$HOME/.cache/vllm-oracle/src ~/.cache/vllm-oracle/venv/bin/python \
      tests/data/managers_033/record_sched.py tests/data/managers_033/sched/*.trace.jsonl
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record  # noqa: E402,F401  (widens harness.make_group_specs)
import sched  # noqa: E402  (the oracle's, on record's path)

def read_input(path):
    """sched.read_input, whose group check knows only the harness's three types: it checks the
    trace with its groups as one full group, then the trace's own groups are put back."""
    lines = open(path).read().splitlines()
    first = json.loads(lines[0])
    groups = first["config"]["groups"]
    first["config"]["groups"] = [{"type": "full"}]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as tmp:
        tmp.write("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    try:
        cfg, reqs = sched.read_input(tmp.name)
    finally:
        os.unlink(tmp.name)
    cfg["groups"] = groups
    return cfg, reqs


if __name__ == "__main__":
    for path in sys.argv[1:]:
        cfg, reqs = read_input(path)
        driver = sched.run_async if cfg.get("async_scheduling") else sched.run
        with open(path.replace(".trace.jsonl", ".expected.jsonl"), "w") as out:
            driver(cfg, reqs, out)
