# ruff: noqa
"""Dev tool (not a test, not run by CI): the CPU tier with speculative decoding (ngram, eagle3,
eagle, mtp; attention or Mamba groups) under pipeline parallelism, step by step: vLLM 0.33.0's
Scheduler / AsyncScheduler, the real OffloadingConnector and the drafts.

    cp -r /work/shared/oracle/tool /tmp/pptool && chmod -R u+w /tmp/pptool && cd /tmp/pptool
    python3 $REPO/tests/data/offload_hybrid/patch_oracle_hybrid.py
    python3 $REPO/tests/data/offload_mamba/patch_oracle_mamba.py
    python3 $REPO/tests/data/offload_mamba_partial/patch_oracle_partial.py
    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/tmp/pptool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/offload_pp_more/oracle_offload_pp_spec.py [--mtp] IN.trace.jsonl=OUT.expected.jsonl ...

The trace is ../offload_spec_more's (sched_offload's keys, `groups` with the Mamba copies'
entries, `prefix_match_unit`, the spec keys) with `"pipeline_parallel_size": N`. Nothing of
vLLM is changed and nothing is copied: ../offload_pp/oracle_offload_pp.py (the sched_offload
text edits, `ParallelConfig(pipeline_parallel_size=N)`, one fake worker a rank aggregated by
vLLM's `KVOutputAggregator`) is loaded first, so that the `sched_offload` module
../offload_spec_more/oracle_offload_spec_more.py (and through it
../offload_spec/oracle_offload_spec.py) imports and patches is the PP one. What this adds:

- every case runs `run_async` (EngineCore.step_with_batch_queue at vLLM's depth: N, N + 1
  async), the synchronous `Scheduler` unless the config line asks for async scheduling;
- the drafts under sync PP are ../sched_spec_pp's (its DESIGN.md): after a step that scheduled a
  batch with tokens, EngineCore.post_step hands `update_draft_token_ids` the V2 runner's
  `[-1] * K` for every request of *that* batch (K = 0 with its `skip_drafts`), delivered when
  schedule() is next called (nothing in between reads or changes a draft), in place of
  oracle_offload_spec's delivery after a batch's own output (the depth-1 loop's); async, none.

`--mtp` as ../offload_spec_more's (its cases in a call of their own).
"""

import importlib.util
import json
import os
import sys
from collections import deque
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent
if "--mtp" in sys.argv[1:]:     # (read when sched_offload is executed, in oracle_offload_pp)
    os.environ["SCHED_ORACLE_MODEL"] = str(DATA / "sched_spec_mtp" / "tiny-deepseek-v3")


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


pp = _load("oracle_offload_pp", DATA / "offload_pp" / "oracle_offload_pp.py")
more = _load("oracle_offload_spec_more", DATA / "offload_spec_more" / "oracle_offload_spec_more.py")
base = more.base
so_mod = base.so_mod
assert so_mod is pp.so_mod, "oracle_offload_spec imported another sched_offload"

from vllm.v1.outputs import DraftTokenIds

_pending: list = []             # (req ids, K) of the last batch with tokens, sync only
_spec_do_schedule = so_mod.Run.do_schedule       # oracle_offload_spec's (padded admissions)


def do_schedule(self, step):
    sch = self.scheduler
    if _pending:
        ids, k = _pending.pop()
        sch.update_draft_token_ids(DraftTokenIds(ids, [[-1] * k for _ in ids]))
    sp = _spec_do_schedule(self, step)
    so = sp["so"]
    if not self.vllm_config.scheduler_config.async_scheduling and \
            so.total_num_scheduled_tokens > 0:
        _pending.append((list(so.num_scheduled_tokens),
                         0 if so.skip_drafts else so.num_spec_tokens_to_schedule))
    return sp


so_mod.Run.do_schedule = do_schedule
so_mod.Run.do_update = base._real_do_update     # (no delivery after a batch's own output)


def run_one(inp: str, outp: str) -> int:
    with open(outp, "w") as out:
        try:
            with open(inp) as f:
                first = json.loads(f.readline())
            pp.WORLD[0] = int(first["config"].get("pipeline_parallel_size", 1))
            cfg, reqs, user_cfg = so_mod.read_input(inp)
            base._state.clear()
            base._state.update(cfg=cfg, batches=deque(), last_so=None,
                               spec=dict.fromkeys(("num_drafts", "num_draft_tokens",
                                                   "num_accepted_tokens"), 0))
            _pending.clear()
            base.check_spec(cfg)
            if cfg.get("groups") == [{"type": "full"}]:
                so_mod.HYBRID[0] = False    # one full group: the one-group output format
            return so_mod.run_async(cfg, reqs, user_cfg, base.Lines(out), emit_queues=False)
        except (ValueError, AssertionError, SystemExit, NotImplementedError) as err:
            out.write(json.dumps({"error": f"{type(err).__name__}: {err}"}) + "\n")
            return 1


def main() -> int:
    code = 0
    for pair in [a for a in sys.argv[1:] if a != "--mtp"]:
        inp, outp = pair.split("=")
        rc = run_one(inp, outp)
        code = max(code, rc)
        print(json.dumps({"done": inp, "rc": rc}), file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
