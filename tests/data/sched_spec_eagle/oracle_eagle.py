"""Dev tool (not a test, not run by CI): vLLM 0.33.0's real schedulers with EAGLE-family
speculative decoding (method "eagle3", "eagle" or "mtp"), step by step.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_spec_eagle/oracle_eagle.py IN.trace.jsonl=OUT.expected.jsonl ...

The trace is oracle_spec.py's (K, acceptance rate, seed in the config line) plus
`"spec_method"` ("eagle3", the default here; "eagle"; "mtp") and optionally
`"disable_lookahead_block_hashes"` (vLLM's SpeculativeConfig field: the legacy block hashes
and the EAGLE trailing-block drop instead of lookahead hashes). The draft model is the
1-layer config.json in `eagle3-draft/` (eagle3), `eagle-draft/` (eagle) or the target itself
(mtp: not buildable, see DESIGN.md). oracle_spec.py's loop and fake model run unchanged; three
things differ:

- the SpeculativeConfig (method, draft model) and the derived values asserted for EAGLE:
  K lookahead slots, 1 prefill lookahead token, 1 hash lookahead token with prefix caching;
- the sync drafts: the V2 runner proposes none (K = 0, empty lists) after a step whose
  SchedulerOutput says `skip_drafts` (model_runner.py:2118-2135, 2332-2338), K placeholders
  for every request of the batch otherwise, as for ngram;
- each step line that called schedule() also gets `"skip_drafts": true` when vLLM set it
  (`_drafts_unused` for every scheduled request, scheduler.py:502-545, 1005, 1575, 1748).
"""

import importlib.util
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")    # the draft is a local config.json: no Hub

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("oracle_spec",
                                               HERE.parent / "sched_spec" / "oracle_spec.py")
oracle_spec = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(oracle_spec)           # exits with its message when ORACLE_TOOL is unset
oracle = oracle_spec.oracle

from vllm.config import SpeculativeConfig  # after oracle_spec put the oracle on sys.path

EAGLE_KEYS = {"spec_method", "disable_lookahead_block_hashes"}
oracle.OPTIONAL_KEYS = oracle.OPTIONAL_KEYS | EAGLE_KEYS
DRAFTS = {"eagle3": HERE / "eagle3-draft", "eagle": HERE / "eagle-draft"}


def method_of(cfg: dict) -> tuple[str, bool]:
    method = cfg.setdefault("spec_method", "eagle3")
    if method not in ("eagle3", "eagle", "mtp"):
        raise SystemExit("config spec_method must be eagle3, eagle or mtp")
    legacy = cfg.get("disable_lookahead_block_hashes", False)
    if type(legacy) is not bool:
        raise SystemExit("config disable_lookahead_block_hashes must be true or false")
    return method, legacy


def build(cfg: dict, k: int):
    """The oracle's Scheduler for `cfg`, its VllmConfig with the EAGLE SpeculativeConfig."""
    method, legacy = method_of(cfg)
    real = oracle.VllmConfig

    def with_spec(**kw):
        model = str(DRAFTS.get(method, kw["model_config"].model))
        kw["speculative_config"] = SpeculativeConfig(
            method=method, model=model, num_speculative_tokens=k,
            disable_lookahead_block_hashes=legacy, target_model_config=kw["model_config"],
            target_parallel_config=kw["parallel_config"])
        return real(**kw)

    oracle.VllmConfig = with_spec
    try:
        scheduler, hasher, vc = oracle.build_scheduler(
            cfg, async_scheduling=bool(cfg.get("async_scheduling")))
    finally:
        oracle.VllmConfig = real
    sp = vc.speculative_config
    caching = bool(cfg["enable_prefix_caching"])
    derived = {"method": sp.method,
               "num_spec_tokens": scheduler.num_spec_tokens,
               "num_lookahead_tokens": scheduler.num_lookahead_tokens,
               "num_hash_lookahead_tokens": vc.num_hash_lookahead_tokens,
               "max_num_new_slots_for_drafting": sp.max_num_new_slots_for_drafting,
               "num_prefill_lookahead_tokens": vc.num_prefill_lookahead_tokens,
               "use_v2_model_runner": vc.use_v2_model_runner,
               "async_scheduling": vc.scheduler_config.async_scheduling,
               "can_skip_drafts": scheduler.can_skip_drafts,
               "use_eagle": scheduler.use_eagle,
               "use_eagle_block_drop": scheduler.use_eagle_block_drop,
               "drop_eagle_group_ids": sorted(
                   scheduler.kv_cache_manager.coordinator.drop_eagle_group_ids)}
    hash_lookahead = int(caching and not legacy)
    expect = {"method": method, "num_spec_tokens": k, "num_lookahead_tokens": k,
              "num_hash_lookahead_tokens": hash_lookahead,
              "max_num_new_slots_for_drafting": 0, "num_prefill_lookahead_tokens": 1,
              "use_v2_model_runner": True, "async_scheduling": bool(cfg.get("async_scheduling")),
              "can_skip_drafts": True, "use_eagle": True,
              "use_eagle_block_drop": not hash_lookahead,
              "drop_eagle_group_ids": ([] if hash_lookahead else
                                       list(range(len(vc_groups(scheduler)))))}
    assert derived == expect, (derived, expect)
    scheduler._eagle_last_output = None

    def schedule(*a, **kw):
        so = scheduler._eagle_last_output = real_schedule(*a, **kw)
        return so

    def update_draft_token_ids(draft):
        # oracle_spec hands K placeholders for the batch it just ran (sync: the last
        # scheduled output); the V2 runner proposes K = 0 when that output skipped drafts.
        so = scheduler._eagle_last_output
        if so is not None and so.skip_drafts:
            draft = oracle_spec.DraftTokenIds(draft.req_ids, [[] for _ in draft.req_ids])
        return real_update(draft)

    real_schedule, real_update = scheduler.schedule, scheduler.update_draft_token_ids
    scheduler.schedule, scheduler.update_draft_token_ids = schedule, update_draft_token_ids
    _current.append(scheduler)
    return scheduler, hasher, vc, derived


def vc_groups(scheduler) -> list:
    return scheduler.kv_cache_manager.coordinator.kv_cache_config.kv_cache_groups


_current: list = []                             # the scheduler of the case being run


class Lines:
    """`out` for oracle_spec.run: each step line that followed a schedule() call gains
    `skip_drafts` when vLLM's SchedulerOutput set it."""

    def __init__(self, out):
        self.out, self.seen = out, None

    def write(self, text: str) -> None:
        rec = json.loads(text)
        sched = _current[-1] if _current else None
        so = getattr(sched, "_eagle_last_output", None)
        if "step" in rec and so is not None and so is not self.seen and \
                not rec.get("idle") and rec.get("schedule_called", True):
            self.seen = so
            if so.skip_drafts:
                rec["skip_drafts"] = True
            text = json.dumps(rec) + "\n"
        self.out.write(text)


oracle_spec.build = build


def main() -> int:
    code = 0
    for pair in sys.argv[1:]:
        inp, outp = pair.split("=")
        with open(outp, "w") as out:
            try:
                cfg, reqs = oracle.read_input(inp)
                method_of(cfg)
                code = max(code, oracle_spec.run(cfg, reqs, Lines(out)))
            except (ValueError, AssertionError, SystemExit, NotImplementedError) as err:
                out.write(json.dumps({"error": f"{type(err).__name__}: {err}"}) + "\n")
                code = max(code, 1)
            finally:
                _current.clear()
    return code


if __name__ == "__main__":
    sys.exit(main())
