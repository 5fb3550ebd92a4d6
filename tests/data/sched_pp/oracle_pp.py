"""Dev tool (not a test, not run by CI): vLLM 0.33.0's real schedulers under pipeline
parallelism, step by step.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_pp/oracle_pp.py IN.trace.jsonl=OUT.expected.jsonl ...

The trace is the scheduler oracle's (`sched.py`'s config line and requests) with
`"pipeline_parallel_size": N` in its config line. The Scheduler is built by `sched.py`'s own
`build_scheduler` with `ParallelConfig(pipeline_parallel_size=N)`, so vLLM's VllmConfig derives
its batch queue (`max_concurrent_batches`: N, or N + 1 under async scheduling) and the tokens in
flight the KV cache manager admits sliding windows against. The step loop is
`EngineCore.step_with_batch_queue` (vllm/v1/engine/core.py), written here for any depth and
either scheduler (`sched.py`'s `run_async` is the same loop at depth 2 with the
AsyncScheduler): schedule a batch when the scheduler has requests and queue it; return early
while the queue is short and (tokens were scheduled or requests remain); else process the
oldest batch's output. Its lines are `run_async`'s.
"""

import json
import os
import sys
from collections import deque
from pathlib import Path

TOOL = os.environ.get("ORACLE_TOOL", "")
if not TOOL or not (Path(TOOL) / "sched.py").is_file():
    sys.exit(f"oracle_pp: no oracle's sched.py in ORACLE_TOOL={TOOL!r} (set it to the "
             "oracle's tool folder)")
sys.path.insert(0, TOOL)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))     # tests/data
import sched as oracle

from oracle_observe import observe

oracle.OPTIONAL_KEYS = oracle.OPTIONAL_KEYS | {"pipeline_parallel_size"}


def build(cfg: dict):
    """The oracle's Scheduler for `cfg`, with its pipeline-parallel size."""
    pp = int(cfg.pop("pipeline_parallel_size", 1))
    real = oracle.ParallelConfig
    oracle.ParallelConfig = lambda: real(pipeline_parallel_size=pp)
    try:
        return oracle.build_scheduler(cfg, async_scheduling=bool(cfg.get("async_scheduling")))
    finally:
        oracle.ParallelConfig = real


def run(cfg: dict, reqs: list, out, stall_limit: int = 1000) -> int:
    scheduler, hasher, vllm_config = build(cfg)
    depth = vllm_config.max_concurrent_batches
    pool = scheduler.kv_cache_manager.block_pool
    preempt_log, events = observe(scheduler, bool(cfg.get("kv_events")))
    stride = cfg["max_model_len"] + 1
    by_step: dict[int, list[int]] = {}
    for i, r in enumerate(reqs):
        by_step.setdefault(r["arrival_step"], []).append(i)
    last_arrival = max(by_step) if by_step else -1
    info = {r["id"]: {"id": r["id"], "index": i, "prompt_len": len(r["prompt"]),
                      "arrival_step": r["arrival_step"], "num_cached_tokens": None,
                      "num_preemptions": 0, "first_scheduled_step": None, "finish_step": None,
                      "num_output_tokens": 0} for i, r in enumerate(reqs)}
    objs: dict = {}
    stats = dict.fromkeys(("requests", "queries", "hits", "preempted_requests",
                           "preempted_queries", "preempted_hits"), 0)
    totals = dict.fromkeys(("steps", "updates", "update_only_steps", "preemptions"), 0)
    queue: deque = deque()
    finished_n = stall = step = adds = 0
    while not (finished_n == len(reqs) and step > last_arrival
               and not any(b[1].total_num_scheduled_tokens for b in queue)):
        for i in by_step.get(step, ()):
            r = reqs[i]
            req = oracle.Request(request_id=r["id"], prompt_token_ids=list(r["prompt"]),
                                 sampling_params=oracle.SamplingParams(
                                     max_tokens=r["output_length"], ignore_eos=True),
                                 pooling_params=None, arrival_time=float(adds),
                                 priority=r["priority"], block_hasher=hasher)
            adds += 1
            objs[r["id"]] = req
            scheduler.add_request(req)
        rec: dict = {"step": step}
        if not (scheduler.has_requests() or queue):
            rec.update(scheduled={}, admitted={}, preempted=[], finished=[],
                       num_free_blocks=pool.get_num_free_blocks(), waiting=[], running=[],
                       idle=True, processed=None, schedule_called=False)
            out.write(json.dumps(rec) + "\n")
            step += 1
            continue
        so, nst, admitted, called = None, {}, {}, scheduler.has_requests()
        if called:
            preempt_log.clear()
            waiting = {r.request_id for r in scheduler.waiting}
            waiting.update(r.request_id for r in scheduler.kv_holding_waiting)
            so = scheduler.schedule()
            totals["preemptions"] += len(preempt_log)
            nst = so.num_scheduled_tokens
            admitted = {rid: objs[rid].num_computed_tokens - n for rid, n in nst.items()
                        if rid in waiting}
            for rid in nst:
                if info[rid]["first_scheduled_step"] is None:
                    info[rid]["first_scheduled_step"] = step
                    ps = objs[rid].prefill_stats
                    info[rid]["num_cached_tokens"] = ps.num_cached_tokens if ps else None
            samplers = frozenset(rid for rid in nst if not objs[rid].is_prefill_chunk)
            queue.appendleft((step, so, samplers))
            totals["steps"] += 1
            executed = so.total_num_scheduled_tokens > 0
            process = not (len(queue) < depth and (executed or scheduler.has_requests()))
        else:
            process = True
            totals["update_only_steps"] += 1
        free_after = pool.get_num_free_blocks()
        finished, processed = [], None
        if process:
            bstep, bso, bsamplers = queue.pop()
            processed = bstep
            ids = list(bso.num_scheduled_tokens)
            sampled = [[oracle.fake_token(info[rid]["index"], objs[rid].num_output_tokens,
                                          stride)] if rid in bsamplers else [] for rid in ids]
            mro = oracle.ModelRunnerOutput(req_ids=ids,
                                           req_id_to_index={r: i for i, r in enumerate(ids)},
                                           sampled_token_ids=sampled, logprobs=None,
                                           prompt_logprobs_dict={}, pooler_output=[])
            totals["updates"] += 1
            for eco in scheduler.update_from_output(bso, mro).values():
                for o in eco.outputs:
                    if o.finish_reason is not None:
                        finished.append(o.request_id)
                        inf, req = info[o.request_id], objs[o.request_id]
                        inf.update(finish_step=step, num_preemptions=req.num_preemptions,
                                   num_output_tokens=req.num_output_tokens)
                ss = eco.scheduler_stats
                if ss is not None and ss.prefix_cache_stats is not None:
                    for k in stats:
                        stats[k] += getattr(ss.prefix_cache_stats, k)
            finished_n += len(finished)
        if (so is None or so.total_num_scheduled_tokens == 0) and step >= last_arrival:
            stall += 1
            if stall >= stall_limit:
                out.write(json.dumps({"error": "stalled", "step": step}) + "\n")
                return 3
        else:
            stall = 0
        rec.update(scheduled=dict(nst), admitted=admitted, preempted=list(preempt_log),
                   finished=finished, num_free_blocks=pool.get_num_free_blocks(),
                   num_free_blocks_after_schedule=free_after,
                   waiting=[r.request_id for r in scheduler.kv_holding_waiting]
                   + [r.request_id for r in scheduler.waiting],
                   running=[r.request_id for r in scheduler.running],
                   processed=processed, schedule_called=called)
        if not called:
            rec["preempted"] = []
        if cfg.get("kv_events"):
            rec["events"] = [dict(type=type(e).__name__,
                                  **{f: getattr(e, f) for f in e.__struct_fields__})
                             for e in events]
            events.clear()
        out.write(json.dumps(rec) + "\n")
        step += 1
    out.write(json.dumps({"summary": {
        "requests": [info[r["id"]] for r in reqs], "prefix_cache_stats": stats,
        "num_steps": step, "totals": totals, "num_free_blocks_end": pool.get_num_free_blocks(),
        "max_concurrent_batches": depth, "scheduler_class": type(scheduler).__name__,
        "max_in_flight_tokens": vllm_config.max_in_flight_tokens}}) + "\n")
    return 0


def main() -> int:
    code = 0
    for pair in sys.argv[1:]:
        inp, outp = pair.split("=")
        cfg, reqs = oracle.read_input(inp)
        with open(outp, "w") as out:
            try:
                code = max(code, run(cfg, reqs, out))
            except (ValueError, AssertionError, SystemExit) as err:   # vLLM refuses to start
                out.write(json.dumps({"error": f"{type(err).__name__}: {err}"}) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
