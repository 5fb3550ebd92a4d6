# ruff: noqa
"""Dev tool (not a test, not run by CI): vLLM 0.33.0's real schedulers with speculative decoding
(ngram, eagle3, eagle, mtp) under pipeline parallelism, step by step.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_spec_pp/oracle_spec_pp.py IN.trace.jsonl=OUT.expected.jsonl ...

The trace is the spec oracles' (K, acceptance rate, seed, `spec_method`,
`disable_lookahead_block_hashes`, hybrid `groups` and `eagle_groups`) with
`"pipeline_parallel_size": N`. The cases of one call are all mtp or none (mtp's target model is
chosen when the oracle's sched.py is imported). Nothing is copied; imported and patched:

- the loop is ../sched_pp/oracle_pp.py's `run` (`step_with_batch_queue` at vLLM's
  `max_concurrent_batches`, PP or PP + 1), its `build` replaced by the spec oracles' builds
  (../sched_spec/oracle_spec.py for ngram, ../sched_spec_eagle/oracle_eagle.py and
  oracle_eagle_hybrid.py for eagle/eagle3, ../sched_spec_mtp/oracle_mtp.py for mtp, with their
  assertions of what vLLM derives) called with `ParallelConfig(pipeline_parallel_size=N)`, as
  oracle_pp's build does;
- the fake model: oracle_pp samples one `fake_token` per sampling request; the scheduler's
  `update_from_output` is wrapped to append the accepted drafts' tokens first, by
  kvcore/engine/spec_accept.py's rule (oracle_spec's), drafts padded onto an admission always
  rejected (oracle_spec's rule), and to sum vLLM's SpecDecodingStats;
- the drafts (DESIGN.md): sync, after a step that scheduled a batch with tokens, the V2 runner's
  `[-1] * K` for every request of *that* batch (K = 0 if its `skip_drafts`), handed to
  `update_draft_token_ids` when schedule() is next called (nothing between the end of the step
  and that call reads or changes a draft: arrivals only add requests); async, none (the
  AsyncScheduler's placeholders).

Lines are oracle_pp's, plus `spec_scheduled` ({id: drafts scheduled}) and `skip_drafts` on a line
that scheduled any, and the summary's `spec` (num_drafts, num_draft_tokens,
num_accepted_tokens) and `config` (the case's, with what vLLM derived in `_effective`).
"""

import importlib.util
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = Path(__file__).resolve().parent
DATA = HERE.parent


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _method(trace: str) -> str:
    with open(trace) as f:
        return json.loads(f.readline())["config"].get("spec_method", "ngram")


def _family(pairs: list[str]) -> bool:
    """Whether the call's cases are mtp ones (all or none)."""
    mtp = {_method(p.split("=")[0]) == "mtp" for p in pairs}
    if len(mtp) > 1:
        sys.exit("oracle_spec_pp: give mtp cases and the others in separate calls (the "
                 "target model is chosen when sched.py is imported)")
    return mtp == {True}


MTP = _family(sys.argv[1:])
if MTP:
    # (sets SCHED_ORACLE_MODEL before sched.py is imported; its oracle_spec's build is mtp's)
    _mtp = _load("oracle_mtp", DATA / "sched_spec_mtp" / "oracle_mtp.py")
    oracle_spec = _mtp.oracle_spec
    BUILDS = {"mtp": oracle_spec.build}
else:
    _ngram = _load("oracle_spec", DATA / "sched_spec" / "oracle_spec.py")
    _hybrid = _load("oracle_eagle_hybrid", DATA / "sched_spec_eagle" / "oracle_eagle_hybrid.py")
    oracle_spec = _ngram
    BUILDS = {"ngram": _ngram.build, "eagle": _hybrid.oracle_eagle.build,
              "eagle3": _hybrid.oracle_eagle.build, "hybrid_eagle": _hybrid.build}
oracle = oracle_spec.oracle
oracle_pp = _load("oracle_pp", DATA / "sched_pp" / "oracle_pp.py")
spec_accept = oracle_spec.spec_accept

from vllm.v1.outputs import DraftTokenIds


class Case:
    """What the wrappers of one case share: its spec settings, request indices, the padded
    admissions of each batch, the drafts to deliver, the last schedule() output, the stats."""

    def __init__(self, cfg: dict, reqs: list):
        self.cfg = dict(cfg)
        self.index = {r["id"]: i for i, r in enumerate(reqs)}
        self.stride = cfg["max_model_len"] + 1
        self.padded: dict = {}
        self.pending = None
        self.last = None
        self.derived = None
        self.depth = None
        self.spec = dict.fromkeys(("num_drafts", "num_draft_tokens", "num_accepted_tokens"), 0)


_case: list = []


def build(cfg: dict):
    """oracle_pp's build (PP from the config line) over the spec oracle's build for the method,
    and the wrappers that deliver drafts and accept them."""
    case = _case[-1]
    pp = int(cfg.pop("pipeline_parallel_size", 1))
    k, rate, seed = oracle_spec.spec_of(cfg)
    method = cfg.get("spec_method", "ngram")
    key = "hybrid_eagle" if method in ("eagle", "eagle3") and "groups" in cfg else method
    if key not in BUILDS:
        raise SystemExit(f"config spec_method {method!r}: not answered in this call")
    real = oracle.ParallelConfig
    oracle.ParallelConfig = lambda: real(pipeline_parallel_size=pp)
    try:
        scheduler, hasher, vc, derived = BUILDS[key](cfg, k)
    finally:
        oracle.ParallelConfig = real
    asyn = vc.scheduler_config.async_scheduling
    case.derived = dict(derived, pipeline_parallel_size=vc.parallel_config.pipeline_parallel_size,
                        max_concurrent_batches=vc.max_concurrent_batches,
                        use_pp=scheduler.use_pp)
    case.depth = vc.max_concurrent_batches
    assert case.depth == pp + asyn, case.depth
    inner_schedule, inner_update = scheduler.schedule, scheduler.update_from_output
    deliver = scheduler.update_draft_token_ids
    objs: dict = {}
    inner_add = scheduler.add_request

    def add_request(req):
        objs[req.request_id] = req
        return inner_add(req)

    def schedule(*a, **kw):
        if case.pending is not None:      # the last batch's drafts (EngineCore.post_step)
            ids, n = case.pending
            case.pending = None
            deliver(DraftTokenIds(ids, [[-1] * n for _ in ids]))
        waiting = {r.request_id for r in scheduler.waiting}
        waiting.update(r.request_id for r in scheduler.kv_holding_waiting)
        so = case.last = inner_schedule(*a, **kw)
        padded = frozenset(rid for rid in so.scheduled_spec_decode_tokens
                           if rid in waiting and rid in so.num_scheduled_tokens)
        for rid in padded:
            assert so.scheduled_spec_decode_tokens[rid] == [-1] * k, rid
            assert so.num_scheduled_tokens[rid] == 1 + k, rid
        case.padded[id(so)] = padded
        if not asyn and so.total_num_scheduled_tokens > 0:
            case.pending = (list(so.num_scheduled_tokens),
                            0 if so.skip_drafts else so.num_spec_tokens_to_schedule)
        return so

    def update_from_output(so, mro):
        padded = case.padded.pop(id(so))
        for i, rid in enumerate(mro.req_ids):
            toks, drafts = mro.sampled_token_ids[i], so.scheduled_spec_decode_tokens.get(rid)
            if not toks or not drafts:
                continue
            n = objs[rid].num_output_tokens
            a = 0 if rid in padded else spec_accept.accepted_drafts(seed, rid, n, len(drafts),
                                                                    rate)
            toks.extend(oracle.fake_token(case.index[rid], n + j, case.stride)
                        for j in range(1, 1 + a))
        ecos = inner_update(so, mro)
        for eco in ecos.values():
            ss = eco.scheduler_stats
            if ss is not None and ss.spec_decoding_stats is not None:
                for key_ in case.spec:
                    case.spec[key_] += getattr(ss.spec_decoding_stats, key_)
        return ecos

    scheduler.add_request, scheduler.schedule = add_request, schedule
    scheduler.update_from_output = update_from_output
    scheduler.update_draft_token_ids = None     # (only the wrapper above delivers)
    return scheduler, hasher, vc


oracle_pp.build = build


class Lines:
    """oracle_pp's `out`: a line that called schedule() gains its drafts (`spec_scheduled`)
    and `skip_drafts`; the summary gains `spec` and `config`."""

    def __init__(self, out, case: Case):
        self.out, self.case, self.seen = out, case, None

    def write(self, text: str) -> None:
        rec = json.loads(text)
        case, so = self.case, self.case.last
        if "step" in rec and rec.get("schedule_called") and so is not None \
                and so is not self.seen:
            self.seen = so
            drafts = {rid: len(t) for rid, t in so.scheduled_spec_decode_tokens.items() if t}
            if drafts:
                rec["spec_scheduled"] = drafts
            if so.skip_drafts:
                rec["skip_drafts"] = True
        if "summary" in rec:
            rec["summary"]["spec"] = case.spec
            rec["summary"]["config"] = dict(case.cfg, _effective={"speculative": case.derived})
            rec["summary"]["vllm_version"] = oracle._vllm_version()
        self.out.write(json.dumps(rec) + "\n")


def main() -> int:
    code = 0
    for pair in sys.argv[1:]:
        inp, outp = pair.split("=")
        with open(outp, "w") as out:
            try:
                cfg, reqs = oracle.read_input(inp)
                _case.append(Case(cfg, reqs))
                code = max(code, oracle_pp.run(cfg, reqs, Lines(out, _case[-1])))
            except (ValueError, AssertionError, SystemExit, NotImplementedError) as err:
                out.write(json.dumps({"error": f"{type(err).__name__}: {err}"}) + "\n")
                code = max(code, 1)
            finally:
                _case.clear()
    return code


if __name__ == "__main__":
    sys.exit(main())
