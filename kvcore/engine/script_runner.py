"""Op scripts, run: `ScriptRunner` answers each op line for line as the oracle's driver (the
real vLLM 0.33) does: one JSON object per op and a final summary, with exactly the keys the
oracle prints. `run_ops` runs a whole script read by `kvcore.engine.op_script`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kvcore.engine.op_script import Op, ScriptConfig, check_op
from kvcore.errors import InputError
from kvcore.group_specs import scheduler_groups
from kvcore.hashing import BlockHasher
from kvcore.host_memory import check_pool_fits
from kvcore.kv_cache_manager import KVCacheManager, KVCachePoolConfig
from kvcore.managers.registry import spec_from_group_config
from kvcore.request import Request, RequestStatus
from kvcore.specs import KVCacheGroupSpec


def build_manager(cfg: ScriptConfig, tracer=None) -> KVCacheManager:
    """The manager the oracle builds: one pool, every group at ``block_size``; with a model's
    groups, each at its own block size (block hashes at their gcd, scheduling at their lcm).
    A pool too large for this machine's memory is refused first (`kvcore.host_memory`)."""
    check_pool_fits(cfg.num_blocks)
    if cfg.specs is not None:
        # (as vLLM's scheduler gets them: a uniform-type group, sparse MLA's, by its first
        # layer's spec; the whole group crashed the manager registry)
        specs = scheduler_groups(list(cfg.specs))
        return KVCacheManager(KVCachePoolConfig(cfg.num_blocks, specs), cfg.max_model_len,
                              max_in_flight_tokens=cfg.max_model_len, enable_caching=True,
                              log_stats=True, enable_kv_cache_events=cfg.kv_events,
                              tracer=tracer)
    groups = [KVCacheGroupSpec((f"layer{i}",), spec_from_group_config(g, cfg.block_size))
              for i, g in enumerate(cfg.groups)]
    return KVCacheManager(KVCachePoolConfig(cfg.num_blocks, groups), cfg.max_model_len,
                          hash_block_size=cfg.block_size, scheduler_block_size=cfg.block_size,
                          max_in_flight_tokens=cfg.max_model_len, enable_caching=True,
                          log_stats=True, enable_kv_cache_events=cfg.kv_events, tracer=tracer)


def _ids(blocks) -> list[list[int]]:
    return [[b.block_id for b in g] for g in blocks]


class ScriptRunner:
    """Owns one `KVCacheManager` and applies ops to it the way the oracle's driver does."""

    def __init__(self, cfg: ScriptConfig, path: str = "<ops>", tracer=None) -> None:
        self.cfg = cfg
        self.path = path
        self.mgr = build_manager(cfg, tracer)
        self.hasher = BlockHasher(self.mgr.hash_block_size, cfg.hash, cfg.hash_seed)
        self.reqs: dict[str, Request] = {}
        self.num_groups = len(cfg.groups)
        self.totals = {"new": 0, "admitted": 0, "rejected": 0, "hit_tokens": 0,
                       "prompt_tokens": 0, "blocks_allocated": 0, "decode": 0, "decode_fail": 0}
        self.stats = {"requests": 0, "queries": 0, "hits": 0}
        self.tracer = tracer

    def _free(self) -> int:
        return self.mgr.block_pool.free_block_queue.num_free_blocks

    def _table(self, rid: str) -> list[list[int]]:
        return [list(g) for g in self.mgr.get_block_ids(rid)]

    # --- ops --------------------------------------------------------------------------
    def apply(self, op: Op | dict) -> dict:
        if not isinstance(op, Op):
            op = Op(op, 0)
        try:
            return self._apply(op)
        except InputError as err:     # raised by the stack (it knows no file): name the op's
            if err.path is not None:
                raise
            raise InputError(err.message, path=self.path, line=op.line or None,
                             field=err.field) from None

    def _apply(self, op: Op) -> dict:
        d = check_op(op, self.path)
        kind = d["op"]
        # An op script has no steps: each op is a step of its own, so a Mamba state cached by
        # one op serves the next (the scheduler's same-step deferral never applies).
        self.mgr.new_step_starts()
        if self.tracer is not None:
            self.tracer.req = None if kind == "summary" else str(d.get("id"))
        if kind == "new":
            res = self.op_new(str(d["id"]), d["prompt"], d.get("num_tokens"))
        elif kind == "prefill":
            res = self.op_prefill(str(d["id"]), d.get("num_tokens"))
        elif kind == "decode":
            res = self.op_decode(str(d["id"]), int(d.get("token", 0)))
        elif kind == "free":
            res = self.op_free(str(d["id"]))
        elif kind == "hashes":
            res = self.op_hashes(str(d["id"]))
        else:
            return self.summary()
        if self.cfg.kv_events:
            res["events"] = [e.to_dict() for e in self.mgr.take_events()]
        return res

    def op_new(self, rid: str, prompt: list[int], num_tokens: int | None) -> dict:
        if rid in self.reqs:
            return {"op": "new", "id": rid, "ok": False, "error": "already admitted",
                    "free": self._free()}
        mgr = self.mgr
        req = Request(rid, list(prompt), self.hasher)
        self.totals["new"] += 1
        hit_blocks, hit, _ = mgr.get_computed_blocks(req)
        n = req.num_tokens - hit if num_tokens is None else min(num_tokens,
                                                                 req.num_tokens - hit)
        res: dict[str, Any] = {"op": "new", "id": rid, "prompt_len": req.num_tokens, "hit": hit}
        if n == 0 and hit == 0:
            # allocate_slots refuses zero new tokens with no hit to adopt; report a refusal.
            self.totals["rejected"] += 1
            res.update(ok=False, error="nothing to schedule", free=self._free())
            return res
        new = mgr.allocate_slots(req, n, hit, hit_blocks,
                                 full_sequence_must_fit=self.cfg.full_sequence_must_fit)
        if new is None:
            self.totals["rejected"] += 1
            res.update(ok=False, free=self._free())
            return res
        mgr.record_prefix_cache_stats(req, hit)
        req.status = RequestStatus.RUNNING
        req.num_computed_tokens = hit + n
        self.reqs[rid] = req
        t = self.totals
        t["admitted"] += 1
        t["hit_tokens"] += hit
        t["prompt_tokens"] += req.num_tokens
        new_ids = _ids(new.blocks)
        t["blocks_allocated"] += sum(map(len, new_ids))
        res.update(ok=True, computed=req.num_computed_tokens, hit_block_ids=_ids(hit_blocks.blocks),
                   new_block_ids=new_ids, block_table=self._table(rid), free=self._free())
        return res

    def op_prefill(self, rid: str, num_tokens: int | None) -> dict:
        req = self.reqs.get(rid)
        if req is None:
            return {"op": "prefill", "id": rid, "ok": False, "error": "not admitted",
                    "free": self._free()}
        rest = req.num_tokens - req.num_computed_tokens
        n = rest if num_tokens is None else min(num_tokens, rest)
        res: dict[str, Any] = {"op": "prefill", "id": rid, "n": n}
        if n <= 0:
            res.update(ok=True, computed=req.num_computed_tokens,
                       new_block_ids=[[] for _ in range(self.num_groups)],
                       block_table=self._table(rid), free=self._free(),
                       note="prompt already complete")
            return res
        new = self.mgr.allocate_slots(req, n)
        if new is None:
            res.update(ok=False, free=self._free())
            return res
        req.num_computed_tokens += n
        new_ids = _ids(new.blocks)
        self.totals["blocks_allocated"] += sum(map(len, new_ids))
        res.update(ok=True, computed=req.num_computed_tokens, new_block_ids=new_ids,
                   block_table=self._table(rid), free=self._free())
        return res

    def op_decode(self, rid: str, token: int) -> dict:
        req = self.reqs.get(rid)
        if req is None:
            return {"op": "decode", "id": rid, "ok": False, "error": "not admitted",
                    "free": self._free()}
        if req.num_computed_tokens != req.num_tokens:
            return {"op": "decode", "id": rid, "token": token, "ok": False,
                    "error": "prompt not fully computed", "free": self._free()}
        req.append_output_token_ids(token)
        self.totals["decode"] += 1
        new = self.mgr.allocate_slots(req, 1)
        res: dict[str, Any] = {"op": "decode", "id": rid, "token": token}
        if new is None:
            self.totals["decode_fail"] += 1
            res.update(ok=False, free=self._free())
            return res
        req.num_computed_tokens += 1
        new_ids = _ids(new.blocks)
        self.totals["blocks_allocated"] += sum(map(len, new_ids))
        res.update(ok=True, computed=req.num_computed_tokens, new_block_ids=new_ids,
                   block_table=self._table(rid), free=self._free())
        return res

    def op_free(self, rid: str) -> dict:
        req = self.reqs.pop(rid, None)
        if req is None:
            return {"op": "free", "id": rid, "ok": False, "free": self._free()}
        self.mgr.free(req)
        return {"op": "free", "id": rid, "free": self._free()}

    def op_hashes(self, rid: str) -> dict:
        req = self.reqs.get(rid)
        if req is None:
            return {"op": "hashes", "id": rid, "ok": False, "error": "not admitted"}
        return {"op": "hashes", "id": rid, "ok": True,
                "block_hashes": [h.hex() for h in req.block_hashes]}

    def summary(self) -> dict:
        st = self.mgr.make_prefix_cache_stats()
        if st is not None:
            self.stats["requests"] += st.requests
            self.stats["queries"] += st.queries
            self.stats["hits"] += st.hits
        s = dict(self.stats)
        pool = self.mgr.block_pool
        return {"op": "summary", "prefix_cache_stats": s,
                "hit_rate": s["hits"] / s["queries"] if s["queries"] else 0.0,
                "free_blocks": pool.get_num_free_blocks(), "num_blocks": self.cfg.num_blocks,
                "cached_block_hashes": len(pool.cached_block_hash_to_block),
                "usage": pool.get_usage(), "totals": dict(self.totals)}


def run_ops(cfg: ScriptConfig, ops: list[Op], path: str = "<ops>") -> Iterator[dict]:
    """Every op's answer, then the final summary (as the oracle prints them)."""
    runner = ScriptRunner(cfg, path)
    for op in ops:
        yield runner.apply(op)
    yield runner.summary()
