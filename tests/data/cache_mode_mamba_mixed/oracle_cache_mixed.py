# ruff: noqa
"""Dev tool (not a test, not run by CI): the cache-mode oracle (the oracle's `cache_mode.py`:
one request at a time, look up, allocate the whole prompt, free) over vLLM 0.33.0's real
KVCacheManager built for Mamba groups in "align" mode beside attention groups of other block
sizes.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/cache_mode_mamba_mixed/oracle_cache_mixed.py IN.trace.jsonl=OUT.expected.jsonl ...

The trace is ../sched_mamba_mixed/'s (a config line with `groups` of their own block sizes and
token-id requests, optionally `prefix_match_unit`); the manager is the one
../sched_mamba_mixed/oracle_mamba_mixed.py's `build` gives its Scheduler (vLLM's own block sizes,
start-up check and hasher), the unit given to vLLM through ../sched_mamba_mixed_pmu/with_unit.py.
Requests run in arrival order (`arrival_step`, ties in file order), as `kvcli replay --mode
cache` takes them; each is a step of its own, so the manager is told a new step starts before
each (kvcli's cache mode does the same: a Mamba state the last request cached is written by
then), and a copy-on-write's
retained blocks are freed after the allocation as `Scheduler.schedule()` frees them without a
connector. Lines: per request `{"id", "hit", "rejected", "events"}` (the KV events its lookup,
allocation and free made, vLLM's `take_events`), then `{"summary": {"hit_tokens",
"prompt_tokens", "rejected"}}`; a case vLLM refuses at start-up gets one `{"error": ...}` line.
"""

import json
import sys
import traceback
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(DATA))
import oracle_mixed  # noqa: E402

# ../sched_mamba_mixed/oracle_mamba_mixed.py, a config line's prefix_match_unit given to vLLM
mixed = oracle_mixed.load("with_unit",
                          DATA / "sched_mamba_mixed_pmu" / "with_unit.py").patched("mixed")

from vllm import SamplingParams  # noqa: E402
from vllm.v1.request import Request  # noqa: E402


def _event(e) -> dict:
    return dict(type=type(e).__name__, **{f: getattr(e, f) for f in e.__struct_fields__})


def run(cfg: dict, reqs: list, out) -> None:
    scheduler, hasher, _ = mixed.build(cfg)
    kvm = scheduler.kv_cache_manager
    hit_tokens = prompt_tokens = rejected = 0
    order = sorted(range(len(reqs)), key=lambda i: (reqs[i]["arrival_step"], i))
    for n, i in enumerate(order):
        r = reqs[i]
        kvm.new_step_starts()
        req = Request(request_id=r["id"], prompt_token_ids=list(r["prompt"]),
                      sampling_params=SamplingParams(max_tokens=r["output_length"],
                                                     ignore_eos=True),
                      pooling_params=None, arrival_time=float(n), priority=r["priority"],
                      block_hasher=hasher)
        blocks, h, req.shared_prefix_boundary = kvm.get_computed_blocks(req)
        new = kvm.allocate_slots(req, req.num_tokens - h, h, blocks,
                                 full_sequence_must_fit=True)
        line = {"id": r["id"], "hit": h, "rejected": new is None}
        if new is None:
            rejected += 1
            kvm.free(req)
        else:
            _, retained = kvm.take_kv_cache_block_copies()
            if retained:
                kvm.block_pool.free_blocks(retained)
            hit_tokens += h
            prompt_tokens += req.num_tokens
            req.num_computed_tokens = req.num_tokens
            kvm.free(req)
        if cfg.get("kv_events"):
            line["events"] = [_event(e) for e in kvm.take_events()]
        out.write(json.dumps(line) + "\n")
    out.write(json.dumps({"summary": {"hit_tokens": hit_tokens, "prompt_tokens": prompt_tokens,
                                      "rejected": rejected}}) + "\n")


def main() -> int:
    rc = 0
    for pair in sys.argv[1:]:
        inp, outp = pair.split("=", 1)
        cfg, reqs = mixed.read_trace(inp)
        try:
            with open(outp, "w") as out:
                run(cfg, reqs, out)
        except Exception as e:  # noqa: BLE001  (vLLM refused the config: say so, go on)
            traceback.print_exc()
            with open(outp, "w") as f:
                f.write(json.dumps({"error": f"{type(e).__name__}: {e}"}) + "\n")
            rc = 1
        print(json.dumps({"done": inp}), file=sys.stderr, flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
