# ruff: noqa
"""Dev tool (not a test, not run by CI): vLLM 0.33.0's Scheduler with the real
OffloadingConnector (the oracle's `sched_offload`, patched for hybrid groups) AND speculative
decoding (ngram, eagle3, eagle), step by step.

    # ORACLE_HOME: the oracle's folder (its tool/ runs the real vLLM; not in this repository)
    cp -r "$ORACLE_HOME/tool" /tmp/sotool && (cd /tmp/sotool && python3 \\
        $PWD/tests/data/offload_hybrid/patch_oracle_hybrid.py)
    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/tmp/sotool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/offload_spec/oracle_offload_spec.py IN.trace.jsonl=OUT.expected.jsonl ...

The trace is `sched_offload`'s (its config keys, `groups` from the hybrid patch) plus
oracle_spec.py's `num_speculative_tokens`, `spec_acceptance_rate`, `spec_seed`, and
oracle_eagle.py's `spec_method` ("ngram" here by default; "eagle3", "eagle") and
`disable_lookahead_block_hashes`, and oracle_eagle_hybrid.py's `eagle_groups` (the groups flagged
`is_eagle_group` in the KVCacheConfig, as vLLM's planning flags the groups holding the draft's
layers; with `groups` only). Their checks and the acceptance rule are imported from those
files, not copied. Nothing of vLLM is changed; the monkeypatches below are on sched_offload:

- `VllmConfig` gets the SpeculativeConfig, built as oracle_spec / oracle_eagle build it (the
  eagle drafts are the 1-layer config.json of `../sched_spec_eagle/`);
- the hybrid KVCacheConfig gets `is_eagle_group` on the `eagle_groups`;
- the fake model: a request that samples gets 1 + a tokens (sched_offload's `fake_token` at
  consecutive output positions), a = kvcore/engine/spec_accept.py's `accepted_drafts`; drafts
  padded onto an admission (`pad_spec_decode`) always rejected (oracle_spec's README);
- sync: after a step that ran the model, `update_draft_token_ids` with K placeholder drafts for
  every request of the batch (none when the output said `skip_drafts`), EngineCore.post_step.

Output: `sched_offload`'s lines (run with `--no-queues`) plus, on a step line that called
schedule(), `spec_scheduled` ({id: drafts scheduled}, when any) and `skip_drafts` (when set);
the summary gains `spec` (vLLM's SpecDecodingStats summed) and `config._effective.speculative`
(what vLLM derived, and the tier's `eagle_offload_groups`: its GroupOffloadConfig flags).
`groups` of one full group (to flag it in `eagle_groups`) answers in the one-group format.
A case vLLM refuses or asserts on is answered with one `{"error": ...}` line.
"""

import importlib.util
import json
import os
import sys
from collections import deque
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = Path(__file__).resolve().parent
TOOL = os.environ.get("ORACLE_TOOL", "")
if not (Path(TOOL) / "sched_offload.py").is_file() or \
        "_hybrid_kv_cache_config" not in (Path(TOOL) / "sched_offload.py").read_text():
    sys.exit(f"oracle_offload_spec: ORACLE_TOOL={TOOL!r} is not a copy of the oracle tool "
             "patched by offload_hybrid/patch_oracle_hybrid.py")

_spec = importlib.util.spec_from_file_location(
    "oracle_eagle_hybrid", HERE.parent / "sched_spec_eagle" / "oracle_eagle_hybrid.py")
oracle_eagle_hybrid = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(oracle_eagle_hybrid)   # loads oracle_eagle, oracle_spec (sys.path)
oracle_eagle = oracle_eagle_hybrid.oracle_eagle
oracle_spec = oracle_eagle.oracle_spec

import sched_offload as so_mod                  # the patched copy, on sys.path via ORACLE_TOOL
from vllm.config import SpeculativeConfig
from vllm.v1.outputs import DraftTokenIds

so_mod.OPTIONAL_KEYS = so_mod.OPTIONAL_KEYS | oracle_spec.SPEC_KEYS | oracle_eagle.EAGLE_KEYS \
    | {"eagle_groups"}
_state: dict = {}                               # the case being run


def check_spec(cfg: dict) -> None:
    """The spec keys, by the spec oracles' own checks."""
    _state["k"], _state["rate"], _state["seed"] = oracle_spec.spec_of(cfg)
    method = cfg.setdefault("spec_method", "ngram")
    if method != "ngram":
        oracle_eagle.method_of(cfg)
    elif "disable_lookahead_block_hashes" in cfg or "eagle_groups" in cfg:
        raise SystemExit("config disable_lookahead_block_hashes / eagle_groups: eagle only")
    _state["flagged"] = oracle_eagle_hybrid.eagle_groups_of(cfg)


_real_vllm_config = so_mod.VllmConfig
_real_groups = so_mod._hybrid_kv_cache_config


def _with_spec(**kw):
    cfg = _state["cfg"]
    method = cfg["spec_method"]
    extra = {}
    if method != "ngram":
        extra = dict(model=str(oracle_eagle.DRAFTS.get(method, kw["model_config"].model)),
                     disable_lookahead_block_hashes=cfg.get("disable_lookahead_block_hashes",
                                                            False))
    kw["speculative_config"] = SpeculativeConfig(
        method=method, num_speculative_tokens=_state["k"],
        target_model_config=kw["model_config"], target_parallel_config=kw["parallel_config"],
        **extra)
    return _real_vllm_config(**kw)


def _groups_config(cfg, vllm_config):
    kcc = _real_groups(cfg, vllm_config)
    for i in _state["flagged"] or ():
        kcc.kv_cache_groups[i].is_eagle_group = True
    return kcc


so_mod.VllmConfig = _with_spec
so_mod._hybrid_kv_cache_config = _groups_config

_real_do_schedule = so_mod.Run.do_schedule
_real_do_update = so_mod.Run.do_update


def do_schedule(self, step):
    sp = _real_do_schedule(self, step)
    so = sp["so"]
    padded = frozenset(rid for rid in so.scheduled_spec_decode_tokens if rid in sp["admitted"])
    for rid in padded:
        assert so.scheduled_spec_decode_tokens[rid] == [-1] * _state["k"], rid
    _state["batches"].append((so, padded))
    _state["last_so"] = so
    return sp


def make_mro(self, req_ids, samplers, kvo):
    so, padded = _state["batches"].popleft()
    assert list(so.num_scheduled_tokens) == list(req_ids)
    _state["processing"] = so
    sampled = []
    for rid in req_ids:
        if rid not in samplers:
            sampled.append([])
            continue
        req = self.req_objs[rid]
        n = req.num_output_tokens
        drafts = so.scheduled_spec_decode_tokens.get(rid, ())
        a = 0 if rid in padded else oracle_spec.spec_accept.accepted_drafts(
            _state["seed"], rid, n, len(drafts), _state["rate"])
        sampled.append([so_mod.fake_token(self.info[rid]["index"], n + j, self.stride)
                        for j in range(1 + a)])
    return so_mod.ModelRunnerOutput(
        req_ids=req_ids, req_id_to_index={rid: i for i, rid in enumerate(req_ids)},
        sampled_token_ids=sampled, logprobs=None, prompt_logprobs_dict={},
        pooler_output=[], kv_connector_output=kvo)


def do_update(self, step, so, mro):
    finished = _real_do_update(self, step, so, mro)
    if not self.vllm_config.scheduler_config.async_scheduling and \
            so.total_num_scheduled_tokens > 0:
        ids = list(so.num_scheduled_tokens)
        k = 0 if so.skip_drafts else so.num_spec_tokens_to_schedule
        self.scheduler.update_draft_token_ids(DraftTokenIds(ids, [[-1] * k for _ in ids]))
    return finished


_real_init = so_mod.Run.__init__


def run_init(self, *a, **kw):
    _real_init(self, *a, **kw)
    sch = self.scheduler
    real_update = sch.update_from_output

    def update_from_output(so, mro):
        out = real_update(so, mro)
        for eco in out.values():
            ss = eco.scheduler_stats
            if ss is not None and ss.spec_decoding_stats is not None:
                for key in _state["spec"]:
                    _state["spec"][key] += getattr(ss.spec_decoding_stats, key)
        return out

    sch.update_from_output = update_from_output
    vc, sp = self.vllm_config, self.vllm_config.speculative_config
    coord = sch.kv_cache_manager.coordinator
    _state["derived"] = {
        "method": sp.method, "num_spec_tokens": sch.num_spec_tokens,
        "num_lookahead_tokens": sch.num_lookahead_tokens,
        "num_hash_lookahead_tokens": vc.num_hash_lookahead_tokens,
        "num_prefill_lookahead_tokens": vc.num_prefill_lookahead_tokens,
        "use_v2_model_runner": vc.use_v2_model_runner,
        "can_skip_drafts": sch.can_skip_drafts,
        "use_eagle_block_drop": sch.use_eagle_block_drop,
        "eagle_group_ids": sorted(coord.eagle_group_ids),
        "drop_eagle_group_ids": sorted(coord.drop_eagle_group_ids),
        "eagle_offload_groups": [c.group_idx for c in self.cs.config.kv_group_configs
                                 if c.is_eagle_group]}
    assert sch.num_spec_tokens == _state["k"], sch.num_spec_tokens


so_mod.Run.__init__ = run_init
so_mod.Run.do_schedule = do_schedule
so_mod.Run.make_mro = make_mro
so_mod.Run.do_update = do_update


class Lines:
    """The driver's `out`: a step line that called schedule() gains `spec_scheduled` and
    `skip_drafts`; the summary gains `spec` and the derived speculative config."""

    def __init__(self, out):
        self.out = out

    def write(self, text: str) -> None:
        rec = json.loads(text)
        so = _state.get("last_so")
        if "step" in rec and so is not None and not rec.get("idle") and \
                rec.get("schedule_called", True):
            _state["last_so"] = None
            drafts = {rid: len(t) for rid, t in so.scheduled_spec_decode_tokens.items() if t}
            if drafts:
                rec["spec_scheduled"] = drafts
            if so.skip_drafts:
                rec["skip_drafts"] = True
        if "summary" in rec:
            rec["summary"]["spec"] = dict(_state["spec"])
            rec["summary"]["config"]["_effective"]["speculative"] = _state["derived"]
        self.out.write(json.dumps(rec) + "\n")


def run_one(inp: str, outp: str) -> int:
    with open(outp, "w") as out:
        try:
            cfg, reqs, user_cfg = so_mod.read_input(inp)
            _state.clear()
            _state.update(cfg=cfg, batches=deque(), last_so=None,
                          spec=dict.fromkeys(("num_drafts", "num_draft_tokens",
                                              "num_accepted_tokens"), 0))
            check_spec(cfg)
            if cfg.get("groups") == [{"type": "full"}]:
                so_mod.HYBRID[0] = False    # one full group: the one-group output format
            driver = so_mod.run_async if cfg.get("async_scheduling") else so_mod.run_sync
            return driver(cfg, reqs, user_cfg, Lines(out), emit_queues=False)
        except (ValueError, AssertionError, SystemExit, NotImplementedError) as err:
            out.write(json.dumps({"error": f"{type(err).__name__}: {err}"}) + "\n")
            return 1


def main() -> int:
    code = 0
    for pair in sys.argv[1:]:
        inp, outp = pair.split("=")
        rc = run_one(inp, outp)
        code = max(code, rc)
        print(json.dumps({"done": inp, "rc": rc}), file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
