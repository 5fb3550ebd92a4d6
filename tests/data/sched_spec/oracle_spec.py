"""Dev tool (not a test, not run by CI): vLLM 0.33.0's real schedulers with n-gram speculative
decoding, step by step.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_spec/oracle_spec.py IN.trace.jsonl=OUT.expected.jsonl ...

The trace is the scheduler oracle's (`sched.py`'s config line and requests) with
`"num_speculative_tokens": K` (>= 1), `"spec_acceptance_rate"` (0 to 1) and optionally
`"spec_seed"` (0) in its config line. The Scheduler is `sched.py`'s own `build_scheduler`, its
VllmConfig given `SpeculativeConfig(method="ngram", num_speculative_tokens=K)` as EngineArgs
builds it (the target's model and parallel configs; prompt_lookup 5/5, vLLM's defaults). The
step loop is `EngineCore.step` under sync scheduling (with `post_step`'s draft delivery) and
`step_with_batch_queue` under async (depth `max_concurrent_batches`, as oracle_pp.py).

Fake model: a request that samples gets 1 + a tokens (`fake_token` at consecutive output
positions), a = kvcore/engine/spec_accept.py's `accepted_drafts`; drafts padded onto an admission
(`pad_spec_decode`) are always rejected, as vLLM's V2 runner does. Sync: K placeholder drafts for
every request of a batch that ran, as the V2 runner reports them. Lines: `sched.py`'s for the
mode, plus `spec_scheduled` and the summary's `spec`. Details and sources: README.md here.
"""

import importlib.util
import json
import os
import sys
from collections import deque
from pathlib import Path

TOOL = os.environ.get("ORACLE_TOOL", "")
if not TOOL or not (Path(TOOL) / "sched.py").is_file():
    sys.exit(f"oracle_spec: no oracle's sched.py in ORACLE_TOOL={TOOL!r} (set it to the "
             "oracle's tool folder)")
sys.path.insert(0, TOOL)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))     # tests/data
import sched as oracle

from oracle_observe import observe
from vllm.config import SpeculativeConfig
from vllm.v1.outputs import DraftTokenIds

# The acceptance rule kvcore replays with, by path: this needs only the oracle's venv.
_rule = importlib.util.spec_from_file_location(
    "spec_accept", Path(__file__).resolve().parents[3] / "kvcore" / "engine" / "spec_accept.py")
spec_accept = importlib.util.module_from_spec(_rule)
_rule.loader.exec_module(spec_accept)

SPEC_KEYS = {"num_speculative_tokens", "spec_acceptance_rate", "spec_seed"}
oracle.OPTIONAL_KEYS = oracle.OPTIONAL_KEYS | SPEC_KEYS
REQ_KEYS = ("id", "num_cached_tokens", "num_preemptions", "first_scheduled_step", "finish_step",
            "finish_reason", "num_output_tokens", "prompt_len", "arrival_step")


def spec_of(cfg: dict) -> tuple[int, float, int]:
    k, rate, seed = (cfg.get("num_speculative_tokens"), cfg.get("spec_acceptance_rate"),
                     cfg.setdefault("spec_seed", 0))
    if not (type(k) is int and k >= 1):
        raise SystemExit("config num_speculative_tokens must be an integer >= 1")
    if not (type(rate) in (int, float) and 0 <= rate <= 1):
        raise SystemExit("config spec_acceptance_rate must be a number in [0, 1]")
    if type(seed) is not int:
        raise SystemExit("config spec_seed must be an integer")
    return k, float(rate), seed


def build(cfg: dict, k: int):
    """The oracle's Scheduler for `cfg`, its VllmConfig with the n-gram SpeculativeConfig."""
    real = oracle.VllmConfig

    def with_spec(**kw):
        kw["speculative_config"] = SpeculativeConfig(
            method="ngram", num_speculative_tokens=k, target_model_config=kw["model_config"],
            target_parallel_config=kw["parallel_config"])
        return real(**kw)

    oracle.VllmConfig = with_spec
    try:
        scheduler, hasher, vc = oracle.build_scheduler(
            cfg, async_scheduling=bool(cfg.get("async_scheduling")))
    finally:
        oracle.VllmConfig = real
    # What vLLM derives for ngram: no lookahead, draft or prefill-lookahead slots, legacy
    # hashes, the V2 runner, drafts never skipped, prompt_lookup 5/5.
    sp = vc.speculative_config
    derived = {"num_spec_tokens": scheduler.num_spec_tokens,
               "num_lookahead_tokens": scheduler.num_lookahead_tokens,
               "num_hash_lookahead_tokens": vc.num_hash_lookahead_tokens,
               "max_num_new_slots_for_drafting": sp.max_num_new_slots_for_drafting,
               "num_prefill_lookahead_tokens": vc.num_prefill_lookahead_tokens,
               "use_v2_model_runner": vc.use_v2_model_runner,
               "async_scheduling": vc.scheduler_config.async_scheduling,
               "can_skip_drafts": scheduler.can_skip_drafts,
               "prompt_lookup": [sp.prompt_lookup_min, sp.prompt_lookup_max]}
    assert derived == {**dict.fromkeys(list(derived)[1:5], 0), "num_spec_tokens": k,
                       "use_v2_model_runner": True, "can_skip_drafts": False,
                       "async_scheduling": bool(cfg.get("async_scheduling")),
                       "prompt_lookup": [5, 5]}, derived
    return scheduler, hasher, vc, derived


def run(cfg: dict, reqs: list, out, stall_limit: int = 1000) -> int:
    k, rate, seed = spec_of(cfg)
    asyn = bool(cfg.get("async_scheduling"))
    scheduler, hasher, vc, derived = build(cfg, k)
    depth = vc.max_concurrent_batches
    assert depth == (2 if asyn else 1), depth
    pool = scheduler.kv_cache_manager.block_pool
    free_at_start = pool.get_num_free_blocks()
    preempt_log, events = observe(scheduler, bool(cfg.get("kv_events")))
    stride = cfg["max_model_len"] + 1
    by_step: dict[int, list[int]] = {}
    for i, r in enumerate(reqs):
        by_step.setdefault(r["arrival_step"], []).append(i)
    last_arrival = max(by_step) if by_step else -1
    info = {r["id"]: {**dict.fromkeys(REQ_KEYS), "id": r["id"], "index": i,
                      "prompt_len": len(r["prompt"]), "arrival_step": r["arrival_step"],
                      "num_preemptions": 0, "num_output_tokens": 0} for i, r in enumerate(reqs)}
    objs: dict = {}
    stats = dict.fromkeys(("requests", "queries", "hits", "preempted_requests",
                           "preempted_queries", "preempted_hits"), 0)
    spec = dict.fromkeys(("num_drafts", "num_draft_tokens", "num_accepted_tokens"), 0)
    totals = dict.fromkeys(("steps", "idle_steps", "scheduled_tokens", "preemptions", "updates",
                            "empty_batches", "update_only_steps", "stale_outputs"), 0)
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
            totals["idle_steps"] += 1
            rec.update(scheduled={}, admitted={}, preempted=[], finished=[],
                       num_free_blocks=pool.get_num_free_blocks(), waiting=[], running=[],
                       idle=True)
            if asyn:
                rec.update(processed=None, schedule_called=False)
            out.write(json.dumps(rec) + "\n")
            step += 1
            continue
        so, nst, admitted, called = None, {}, {}, scheduler.has_requests()
        preempt_log.clear()
        if called:
            waiting = {r.request_id for r in scheduler.waiting}
            waiting.update(r.request_id for r in scheduler.kv_holding_waiting)
            so = scheduler.schedule()
            assert set(preempt_log) == set(so.preempted_req_ids), preempt_log
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
            # A waiting request admitted with drafts was padded (pad_spec_decode): it had
            # none of its own (new, or preempted, which clears them).
            padded = frozenset(rid for rid in so.scheduled_spec_decode_tokens if rid in admitted)
            for rid in padded:
                assert so.scheduled_spec_decode_tokens[rid] == [-1] * k, rid
                assert nst[rid] == 1 + k and rid in samplers, rid
            queue.appendleft((step, so, samplers, padded))
            totals["steps"] += 1
            totals["scheduled_tokens"] += so.total_num_scheduled_tokens
            executed = so.total_num_scheduled_tokens > 0
            totals["empty_batches"] += not executed
            process = not (len(queue) < depth and (executed or scheduler.has_requests()))
        else:
            process = True
            totals["update_only_steps"] += 1
        free_after = pool.get_num_free_blocks()
        finished, processed = [], None
        if process:
            bstep, bso, bsamplers, bpadded = queue.pop()
            processed = bstep
            ids = list(bso.num_scheduled_tokens)
            sampled = []
            for rid in ids:
                req, drafts = objs[rid], bso.scheduled_spec_decode_tokens.get(rid, ())
                if rid not in bsamplers:
                    sampled.append([])
                    continue
                totals["stale_outputs"] += req.num_stale_output_tokens > 0
                n = req.num_output_tokens
                a = 0 if rid in bpadded else spec_accept.accepted_drafts(
                    seed, rid, n, len(drafts), rate)
                sampled.append([oracle.fake_token(info[rid]["index"], n + j, stride)
                                for j in range(1 + a)])
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
                        inf.update(finish_step=step, finish_reason=str(o.finish_reason),
                                   num_preemptions=req.num_preemptions,
                                   num_output_tokens=req.num_output_tokens)
                ss = eco.scheduler_stats
                if ss is not None and ss.prefix_cache_stats is not None:
                    for key in stats:
                        stats[key] += getattr(ss.prefix_cache_stats, key)
                if ss is not None and ss.spec_decoding_stats is not None:
                    for key in spec:
                        spec[key] += getattr(ss.spec_decoding_stats, key)
            finished_n += len(finished)
            if not asyn and bso.total_num_scheduled_tokens > 0:
                # EngineCore.post_step: the runner's drafts, after a step that ran the model.
                scheduler.update_draft_token_ids(DraftTokenIds(
                    ids, [[-1] * bso.num_spec_tokens_to_schedule for _ in ids]))
        idle = (so is None or so.total_num_scheduled_tokens == 0) and step >= last_arrival
        stall = stall + 1 if idle else 0
        if stall >= stall_limit:
            out.write(json.dumps({"error": "stalled", "step": step}) + "\n")
            return 3
        rec.update(scheduled=dict(nst), admitted=admitted, preempted=list(preempt_log),
                   finished=finished, num_free_blocks=pool.get_num_free_blocks(),
                   num_free_blocks_after_schedule=free_after)
        if cfg.get("kv_events"):
            rec["events"] = [{"type": type(e).__name__, **{f: getattr(e, f) for f in
                                                           e.__struct_fields__}} for e in events]
            events.clear()
        rec.update(waiting=[r.request_id for r in scheduler.kv_holding_waiting]
                   + [r.request_id for r in scheduler.waiting],
                   running=[r.request_id for r in scheduler.running])
        if asyn:
            rec.update(processed=processed, schedule_called=called)
        if so is not None and so.scheduled_spec_decode_tokens:
            rec["spec_scheduled"] = {rid: len(t) for rid, t in
                                     so.scheduled_spec_decode_tokens.items() if t}
        out.write(json.dumps(rec) + "\n")
        step += 1
    assert all(b[1].total_num_scheduled_tokens == 0 for b in queue)
    totals = {key: n for key, n in totals.items() if asyn or key in list(totals)[:4]}
    sc = vc.scheduler_config
    effective = dict(
        max_num_seqs=sc.max_num_seqs, max_num_batched_tokens=sc.max_num_batched_tokens,
        long_prefill_token_threshold=sc.long_prefill_token_threshold, watermark=sc.watermark,
        policy=sc.policy, scheduler_reserve_full_isl=sc.scheduler_reserve_full_isl,
        enable_chunked_prefill=sc.enable_chunked_prefill, async_scheduling=sc.async_scheduling,
        enable_prefix_caching=vc.cache_config.enable_prefix_caching,
        max_model_len=vc.model_config.max_model_len, num_blocks=pool.num_gpu_blocks,
        scheduler_class=type(scheduler).__name__, max_concurrent_batches=depth,
        speculative=derived,
        **(oracle.groups_effective(scheduler, vc) if cfg.get("groups") is not None else {}))
    summary = {"requests": [{key: info[r["id"]][key] for key in REQ_KEYS} for r in reqs],
               "prefix_cache_stats": stats, "spec": spec, "num_steps": step, "totals": totals,
               "num_free_blocks_end": pool.get_num_free_blocks()}
    if asyn:
        summary.update(num_free_blocks_start=free_at_start,
                       in_flight_at_end=[b[0] for b in reversed(queue)])
    summary.update(config=dict(cfg, _effective=effective), vllm_version=oracle._vllm_version())
    out.write(json.dumps({"summary": summary}) + "\n")
    return 0


def main() -> int:
    code = 0
    for pair in sys.argv[1:]:
        inp, outp = pair.split("=")
        with open(outp, "w") as out:
            try:
                cfg, reqs = oracle.read_input(inp)
                code = max(code, run(cfg, reqs, out))
            except (ValueError, AssertionError, SystemExit) as err:   # vLLM refuses to start
                out.write(json.dumps({"error": f"{type(err).__name__}: {err}"}) + "\n")
                code = max(code, 1)
    return code


if __name__ == "__main__":
    sys.exit(main())
