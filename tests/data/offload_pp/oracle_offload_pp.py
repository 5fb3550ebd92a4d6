# ruff: noqa
"""Dev tool (not a test, not run by CI): vLLM 0.33.0's Scheduler with the real
OffloadingConnector (the oracle's `sched_offload`, patched for hybrid groups) under pipeline
parallelism, step by step.

    # ORACLE_HOME: the oracle's folder (its tool/ runs the real vLLM; not in this repository)
    cp -r "$ORACLE_HOME/tool" /tmp/pptool && (cd /tmp/pptool && python3 \\
        $PWD/tests/data/offload_hybrid/patch_oracle_hybrid.py)
    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/tmp/pptool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/offload_pp/oracle_offload_pp.py IN.trace.jsonl=OUT.expected.jsonl ...

The trace is `sched_offload`'s (its config keys, `groups` from the hybrid patch) with
`"pipeline_parallel_size": N`. Nothing of vLLM is changed. What this adds to sched_offload
(loaded from ORACLE_TOOL with the four text edits below, not copied):

- `ParallelConfig(pipeline_parallel_size=N)`: vLLM derives its batch queue
  (`max_concurrent_batches` N, N + 1 under async scheduling), `max_in_flight_tokens` (the
  hybrid start-up check), `defer_block_free` (any queue deeper than 1 with a kv_both connector)
  and the connector's `num_workers` = world size = N (a job completes when N reports of it are
  summed);
- the geometry keys are one rank's (every stage holds `num_layers` layers of each group): the
  scheduler's KVCacheConfig is rank 0's, so vLLM sizes a chunk as that block x world size
  (`CPUOffloadingSpec`), and `kv_offloading_size_chunks` is turned into GiB with that chunk;
- N fake workers, one a rank, each sched_offload's `FakeOffloadWorker` driven with its own copy
  of the batch's metadata when the batch is scheduled (each rank runs the batches in order,
  the step counts count its executed batches), their `KVConnectorOutput`s combined by vLLM's
  own `KVOutputAggregator` (`from_connector(connector, world_size)`), as the multiproc
  executor combines the ranks' `sample_tokens` replies; the step line's `store_done` /
  `load_done` are rank 0's (asserted equal on every rank); the summary's worker bytes and blocks
  are one rank's, and vLLM's aggregated `kv_offload_*_bytes` are asserted to be N times them;
- the driver is sched_offload's `run_async` (EngineCore.step_with_batch_queue) at vLLM's depth,
  with the synchronous `Scheduler` when the config line does not ask for async scheduling.

A case vLLM refuses or asserts on is answered with one `{"error": ...}` line.
"""

import copy
import json
import os
import sys
import types
from pathlib import Path

TOOL = os.environ.get("ORACLE_TOOL", "")
SRC_FILE = Path(TOOL) / "sched_offload.py"
if not SRC_FILE.is_file() or "_hybrid_kv_cache_config" not in SRC_FILE.read_text():
    sys.exit(f"oracle_offload_pp: ORACLE_TOOL={TOOL!r} is not a copy of the oracle tool "
             "patched by offload_hybrid/patch_oracle_hybrid.py")
sys.path.insert(0, TOOL)
WORLD = [1]
text = SRC_FILE.read_text()


def rep(old: str, new: str) -> None:
    global text
    assert text.count(old) == 1, old
    text = text.replace(old, new)


rep("assert vllm_config.parallel_config.world_size == 1",
    "assert vllm_config.parallel_config.world_size == WORLD[0]")
rep("chunk_bytes = -(-block_bytes * bpc // PAGE_ALIGN) * PAGE_ALIGN",
    "chunk_bytes = -(-block_bytes * WORLD[0] * bpc // PAGE_ALIGN) * PAGE_ALIGN")
rep("    R = Run(cfg, reqs, user_cfg, async_scheduling=True)\n    sch = R.scheduler\n"
    "    queue_size = R.vllm_config.max_concurrent_batches\n    assert queue_size == 2, queue_size\n",
    "    R = Run(cfg, reqs, user_cfg, async_scheduling=bool(cfg.get('async_scheduling')))\n"
    "    sch = R.scheduler\n    queue_size = R.vllm_config.max_concurrent_batches\n")
rep("                assert R.req_objs[rid].num_output_placeholders > 0, rid",
    "                assert R.req_objs[rid].num_output_placeholders > 0 or "
    "not cfg.get('async_scheduling'), rid")
for kind in ("load", "store"):
    rep(f'assert kcs.get("kv_offload_{kind}_bytes", 0) == self.worker.bytes["{kind}"], kcs',
        f'assert kcs.get("kv_offload_{kind}_bytes", 0) == self.worker.bytes["{kind}"] '
        '* WORLD[0], kcs')

so_mod = types.ModuleType("sched_offload")
so_mod.__file__ = str(SRC_FILE)
so_mod.WORLD = WORLD
sys.modules["sched_offload"] = so_mod
exec(compile(text, str(SRC_FILE), "exec"), so_mod.__dict__)

from vllm.distributed.kv_transfer.kv_connector.utils import KVOutputAggregator

so_mod.OPTIONAL_KEYS = so_mod.OPTIONAL_KEYS | {"pipeline_parallel_size"}
_RealParallel = so_mod.ParallelConfig
so_mod.ParallelConfig = lambda: _RealParallel(pipeline_parallel_size=WORLD[0])


class _RankOutput:
    """What the executor's aggregator reads of a rank's reply."""

    def __init__(self, kvo):
        self.kv_connector_output = kvo


class RankWorkers:
    """One sched_offload FakeOffloadWorker a pipeline rank, their reports aggregated."""

    def __init__(self, n, store_steps, load_steps, block_bytes, connector):
        self.ranks = [so_mod.FakeOffloadWorker(store_steps, load_steps, block_bytes)
                      for _ in range(n)]
        self.aggregator = KVOutputAggregator.from_connector(connector, n)
        self.bytes, self.blocks = self.ranks[0].bytes, self.ranks[0].blocks

    def in_flight(self):
        return self.ranks[0].in_flight()

    def step(self, step, meta):
        outs, first = [], None
        for w in self.ranks:
            m = copy.copy(meta)
            m.store_jobs, m.load_jobs = dict(meta.store_jobs), dict(meta.load_jobs)
            kvo, done = w.step(step, m)
            assert first is None or done == first, (done, first)
            first = first or done
            outs.append(_RankOutput(kvo))
        agg = self.aggregator.aggregate(outs, output_rank=0).kv_connector_output
        return agg, first


_real_init = so_mod.Run.__init__


def run_init(self, *a, **kw):
    _real_init(self, *a, **kw)
    w = self.worker
    self.worker = RankWorkers(WORLD[0], w.store_steps, w.load_steps, w.block_bytes,
                              self.scheduler.connector)
    vc = self.vllm_config
    assert vc.parallel_config.pipeline_parallel_size == WORLD[0]
    assert self.cs.config.num_workers == WORLD[0]
    if vc.max_concurrent_batches > 1:
        assert self.scheduler.defer_block_free


so_mod.Run.__init__ = run_init


def run_one(inp, outp):
    with open(outp, "w") as out:
        try:
            with open(inp) as f:     # (read_input sizes a chunk in chunks' GiB: world first)
                first = json.loads(f.readline())
            WORLD[0] = int(first["config"].get("pipeline_parallel_size", 1))
            cfg, reqs, user_cfg = so_mod.read_input(inp)
            return so_mod.run_async(cfg, reqs, user_cfg, out, emit_queues=False)
        except (ValueError, AssertionError, SystemExit, NotImplementedError) as err:
            out.write(json.dumps({"error": f"{type(err).__name__}: {err}"}) + "\n")
            return 1


def main():
    code = 0
    for pair in sys.argv[1:]:
        inp, outp = pair.split("=")
        rc = run_one(inp, outp)
        code = max(code, rc)
        print(json.dumps({"done": inp, "rc": rc}), file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
