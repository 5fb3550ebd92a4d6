"""Dev tool (not a test): the scheduler oracle's answers to many traces in one process.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/oracle_batch.py [--no-queues] IN.trace.jsonl=OUT.expected.jsonl ...

`oracle sched` answers one trace a process and spends ~13 s of it importing vLLM; this imports
the oracle's `sched.py` (in $ORACLE_TOOL, the oracle's tool folder) once and calls its drivers
(`run`, `run_async` by the config line, as its `main` does) for each pair. Its answers were
byte-identical to `oracle sched`'s on the cases checked (sched_fresh/README.md); a kept fixture
is still answered by `oracle sched` itself. A case vLLM refuses gets an `{"error": ...}` line,
as `oracle sched_offload --batch` writes (that one has its own `--batch`).
"""

import json
import os
import sys
import traceback
from pathlib import Path

# the oracle's tool folder, named by the one who runs this (it lives outside this repository;
# the tests read only the answers recorded here)
TOOL = os.environ.get("ORACLE_TOOL", "")
if not TOOL or not (Path(TOOL) / "sched.py").is_file():
    # a development tool only: the tests read the answers it recorded (copied into tests/data);
    # without the oracle, `import sched` below would quietly take the standard library's
    sys.exit(f"oracle_batch: no oracle's sched.py in ORACLE_TOOL={TOOL!r} (set it to the "
             "oracle's tool folder)")
sys.path.insert(0, TOOL)
# (first on the path: the oracle's sched.py, not the standard library's sched)
import sched as oracle


def answer(inp: str, outp: str, cfg: dict, reqs: list, queues: bool = True) -> int:
    """Write the oracle's answer to trace `inp` (read as `cfg`, `reqs`) into `outp` with
    `sched.py`'s own driver (`run_async` by the config line, else `run`); its exit code. A case
    vLLM refuses gets an `{"error": ...}` line. (oracle_mamba.py answers through this too.)"""
    driver = oracle.run_async if cfg.get("async_scheduling") else oracle.run
    try:
        with open(outp, "w") as out:
            r = driver(cfg, reqs, out, emit_steps=True, emit_queues=queues, max_steps=None)
    except Exception as e:  # noqa: BLE001  (vLLM refused the config: say so, go on)
        traceback.print_exc()
        with open(outp, "a") as f:
            f.write(json.dumps({"error": f"{type(e).__name__}: {e}"}) + "\n")
        r = 1
    print(json.dumps({"done": inp, "rc": r}), file=sys.stderr, flush=True)
    return r


def main() -> int:
    queues = "--no-queues" not in sys.argv[1:]
    rc = 0
    for pair in [a for a in sys.argv[1:] if a != "--no-queues"]:
        inp, outp = pair.split("=", 1)
        cfg, reqs = oracle.read_input(inp)
        rc = answer(inp, outp, cfg, reqs, queues) or rc
    return rc


if __name__ == "__main__":
    sys.exit(main())
