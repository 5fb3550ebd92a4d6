# ruff: noqa
"""Dev tool (not a test, not run by CI): vLLM 0.33.0's Scheduler and AsyncScheduler over Mamba
groups in "align" mode beside attention groups of other block sizes, no drafts, step by step.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_mamba_mixed/oracle_mamba_mixed.py [--async] IN.trace.jsonl=OUT.expected.jsonl ...

The trace is ../oracle_mamba.py's, its config line's `groups` of "mamba", "full" and
"sliding_window" entries, each optionally with its own `block_size` (else the config line's).
What runs is ../oracle_mamba.py's (sched.py's step loop, `answer`), with the Scheduler built by
`build` below: ../oracle_mixed.py's construction (the one
../sched_spec_eagle_mixed/oracle_eagle_mixed.py makes, without a draft):

- each group's spec at its own block size, every page one size as vLLM's planning makes them
  (an attention group's head size is lcm / its block, a Mamba state padded to that page;
  asserted equal); the Mamba groups at the config line's block size, which align mode makes
  `mamba_block_size` (MambaModelConfig, the platform's hybrid block sizing);
- vLLM's own `resolve_kv_cache_block_sizes` gives the scheduler block (the lcm of the groups')
  and the hash block (their gcd), passed to the Scheduler and the block hasher as EngineCore
  passes them (core.py); `cache_config.block_size` stays the config line's;
- the start-up check (`_check_enough_kv_cache_memory`, one max_model_len request in
  num_blocks - 1 pages) over those groups, refused as vLLM refuses it (the case's line is
  `{"error": "ValueError: vLLM would refuse to start: ..."}`).
"""

import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(DATA))
import oracle_mixed  # noqa: E402

oracle_mamba = oracle_mixed.load("oracle_mamba", DATA / "oracle_mamba.py")
oracle = oracle_mamba.oracle

TYPES = ("full", "sliding_window", "mamba")


def build(cfg: dict, async_scheduling: bool = False):
    """oracle_mamba.build_mamba_scheduler's construction over groups of their own block sizes."""
    assert cfg["enable_prefix_caching"], "align mode only"
    # (an exception, not an exit: `answer` records it as the case's line and goes on)
    built = oracle_mixed.build(cfg, async_scheduling, refusal=ValueError)
    assert built[0].need_mamba_block_aligned_split
    return built


def read_trace(path: str):
    return oracle_mixed.read_trace(path, TYPES)


oracle_mamba.build_mamba_scheduler = build
oracle_mamba.read_trace = read_trace


if __name__ == "__main__":
    sys.exit(oracle_mamba.main())
