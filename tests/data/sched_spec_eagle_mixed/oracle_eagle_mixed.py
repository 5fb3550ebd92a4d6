# ruff: noqa
"""Dev tool (not a test, not run by CI): vLLM 0.33.0's schedulers with an EAGLE-family draft
over KV cache groups of different block sizes, step by step.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_spec_eagle_mixed/oracle_eagle_mixed.py IN.trace.jsonl=OUT.expected.jsonl ...

The trace is ../sched_spec_mamba/oracle_spec_mamba.py's (eagle3 or eagle; its config line's
`groups` of "full", "sliding_window", "chunked_local" and "mamba" entries, with or without a
Mamba group), each group optionally with its own `block_size` (else the config line's). What
runs is oracle_spec_mamba.py's (oracle_eagle_hybrid.py's build and checks over oracle_eagle.py's
drafts and oracle_spec.py's loop), with the Scheduler's construction replaced by `build` below,
../oracle_mixed.py's (each group's spec at its own block size, one page size; vLLM's own
scheduler and hash block sizes; the start-up check, refused as vLLM refuses it), the Mamba
groups with num_speculative_tokens speculative blocks and the `eagle_groups` flagged.
"""

import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(DATA))
import oracle_mixed  # noqa: E402

spec_mamba = oracle_mixed.load("oracle_spec_mamba",
                               DATA / "sched_spec_mamba" / "oracle_spec_mamba.py")
oracle_mamba = spec_mamba.oracle_mamba
oracle = spec_mamba.oracle

TYPES = ("full", "sliding_window", "chunked_local", "mamba")


def build(cfg: dict, async_scheduling: bool = False):
    """oracle_mamba.build_mamba_scheduler's construction over groups of their own block sizes."""
    return oracle_mixed.build(cfg, async_scheduling, spec_blocks=cfg["num_speculative_tokens"])


def read_trace(path: str):
    return oracle_mixed.read_trace(path, TYPES)


oracle_mamba.build_mamba_scheduler = build
oracle_mamba.read_trace = read_trace


if __name__ == "__main__":
    sys.exit(spec_mamba.main())
