# ruff: noqa
"""Dev tool (not a test, not run by CI): vLLM 0.33.0's Scheduler and AsyncScheduler under
pipeline parallelism over the groups it plans for a Mamba hybrid some of whose stages hold no
attention layer (Mamba groups at two block sizes), step by step.

    R=~/.cache/vllm-oracle
    (ulimit -v 16000000; ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src \\
        VLLM_LOGGING_LEVEL=ERROR flock /tmp/vllm-build.lock nice -n 10 $R/venv/bin/python \\
        tests/data/sched_pp_mamba_stages/oracle_pp_stages.py IN.trace.jsonl=OUT.expected.jsonl ...)

The trace is ../sched_mamba_mixed's (its config line's `groups` of "mamba" and "full" entries,
each optionally with its own `block_size`) with `"pipeline_parallel_size": N` and
`async_scheduling`. Nothing is copied; two dev tools are joined:

- ../sched_mamba_mixed/oracle_mamba_mixed.py's build (../oracle_mixed.py's: each group's spec
  at its own block size, Mamba ones too, every page one size; vLLM's own
  `resolve_kv_cache_block_sizes`; `cache_config.block_size` and `mamba_block_size` the config
  line's block, the smallest, as EngineCore sets `cache_config.block_size` to its
  prefix-cacheable groups' smallest once planned; the start-up check);
- ../sched_pp/oracle_pp.py's `step_with_batch_queue` loop at `max_concurrent_batches` and its
  lines.

The one thing added: oracle_mixed's build makes its own `ParallelConfig()` (from vllm.config),
so `vllm.config.ParallelConfig` is, for the build's moment, the one oracle_pp's build makes,
`ParallelConfig(pipeline_parallel_size=N)` (../sched_spec_pp_mamba/oracle_spec_pp_mamba.py
does the same).
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent
sys.path.insert(0, str(DATA))
import oracle_mixed  # noqa: E402

mixed = oracle_mixed.load("oracle_mamba_mixed",
                          DATA / "sched_mamba_mixed" / "oracle_mamba_mixed.py")
oracle_pp = oracle_mixed.load("oracle_pp", DATA / "sched_pp" / "oracle_pp.py")
oracle = oracle_pp.oracle

import vllm.config as config_module  # noqa: E402


def build_scheduler(cfg: dict, async_scheduling: bool = False):
    """oracle_mamba_mixed's build with vllm.config's ParallelConfig the PP one oracle_pp's
    build has just set in sched.py."""
    real, made = config_module.ParallelConfig, oracle.ParallelConfig

    class PP(real):
        """(a class: modules vLLM imports meanwhile annotate with it; what it makes is the real
        ParallelConfig with the case's PP)"""
        def __new__(cls, **kw):
            assert not kw, kw
            return made()

    config_module.ParallelConfig = PP
    try:
        built = mixed.build(cfg, async_scheduling)
    finally:
        config_module.ParallelConfig = real
    pc = built[2].parallel_config
    assert type(pc) is real and pc.pipeline_parallel_size > 1, pc
    return built


oracle.build_scheduler = build_scheduler


def main() -> int:
    code = 0
    for pair in sys.argv[1:]:
        inp, outp = pair.split("=")
        with open(outp, "w") as out:
            try:
                cfg, reqs = mixed.read_trace(inp)
                code = max(code, oracle_pp.run(cfg, reqs, out))
            except (ValueError, AssertionError, SystemExit) as err:  # vLLM refuses to start
                out.write(json.dumps({"error": f"{type(err).__name__}: {err}"}) + "\n")
        print(json.dumps({"done": inp, "rc": code}), file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
