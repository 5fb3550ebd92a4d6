# ruff: noqa
"""Dev tool (not a test): answered drafted cases (make_pmu_drafts.py's) against kvcli.

    KVCLI_PURE=1 PYTHONPATH=.:tests .venv/bin/python tests/data/sched_pmu_drafts/compare_drafts.py DIR

For every `X.trace.jsonl` with its `X.expected.jsonl`: where vLLM ran it, kvcli's replay in the
config line's mode matched as `oracle_sched.check_spec_case` matches it (steps, requests, KV
events where on, drafts, spec stats); where vLLM refused it (the answer's last line an
"error"), kvcli must refuse it too (an InputError, both messages printed). Prints one line a
case and the counts; exit 1 when any differs.
"""

import sys
import traceback
from pathlib import Path

import oracle_sched as O

from kvcore.errors import InputError


def one(trace: Path) -> tuple[str, str]:
    expected = O.answer_of(trace)
    vllm_error = expected[-1].get("error") if expected else "empty answer"
    try:
        if vllm_error:
            O.replay_case(trace, async_scheduling=O.config_of(trace).get("async_scheduling", False))
            return "differ", f"vLLM: {vllm_error} / kvcli ran"
        O.check_spec_case(trace, expected)
        return "match", ""
    except InputError as e:
        if vllm_error:
            return "refused alike", f"vLLM: {vllm_error[:120]} / kvcli: {str(e)[:200]}"
        return "differ", f"vLLM ran / kvcli: {str(e)[:300]}"
    except Exception as e:  # noqa: BLE001 (every case reported)
        return "differ", "".join(traceback.format_exception_only(e))[:1500]


def main() -> int:
    counts: dict[str, int] = {}
    for d in sys.argv[1:]:
        for trace in sorted(Path(d).glob("*.trace.jsonl")):
            verdict, why = one(trace)
            counts[verdict] = counts.get(verdict, 0) + 1
            print(f"{trace.name[:-12]}: {verdict} {why}", flush=True)
    print(counts, flush=True)
    return 1 if counts.get("differ") else 0


if __name__ == "__main__":
    sys.exit(main())
