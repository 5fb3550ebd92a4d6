"""Op scripts: scripted KV-cache-manager operations, answered line for line as vLLM 0.33 does.

The contract is the oracle's (`shared/oracle/README.md`): input is one JSON document
``{"config": {...}, "ops": [...]}`` or JSON lines (a ``{"config": ...}`` line, then one op a
line), optionally gzipped; output is one JSON object per op and a final summary, with exactly
the keys the oracle prints. `ScriptRunner.apply(op)` answers one op; `run_ops` all of them.

Config keys: ``groups`` (each ``{"type": ...}``, see `kvcore.managers.registry`), ``block_size``
(16), ``num_blocks`` (1024), ``hash`` (sha256), ``hash_seed`` (kvcli's own: the NONE_HASH seed,
default ``"vllm-none-hash"``), ``max_model_len`` (32768), ``full_sequence_must_fit`` (true),
``kv_events`` (false). Ops: ``new``, ``prefill``, ``decode``, ``free``, ``hashes``, ``summary``.

A model (`with_model`: a preset, a config.json or explicit geometry, as `kvcli config` and the
replay take them) replaces the script's ``groups`` with the model's KV cache groups (full,
sliding window, chunked local, Mamba; each at its own block size) and may size ``num_blocks``
from GPU memory. Precedence: command-line flags, then the script's config, then the defaults.
"""

from __future__ import annotations

import gzip
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from kvcore.errors import InputError
from kvcore.hashing import HASH_FUNCTIONS, BlockHasher
from kvcore.kv_cache_manager import KVCacheConfig, KVCacheManager
from kvcore.managers.registry import spec_from_group_config
from kvcore.request import Request, RequestStatus
from kvcore.specs import KVCacheGroupSpec

DEFAULTS: dict[str, Any] = {"groups": [{"type": "full"}], "block_size": 16, "num_blocks": 1024,
                            "hash": "sha256", "hash_seed": None, "max_model_len": 32768,
                            "full_sequence_must_fit": True, "kv_events": False}
OPS = ("new", "prefill", "decode", "free", "hashes", "summary")


@dataclass(slots=True)
class ScriptConfig:
    groups: list[dict]
    block_size: int
    num_blocks: int
    hash: str
    hash_seed: str | None
    max_model_len: int
    full_sequence_must_fit: bool
    kv_events: bool
    given: frozenset = frozenset()   # the keys the script's config set itself
    specs: list | None = None        # a model's `KVCacheGroupSpec`s (replace `groups`)
    model: str | None = None         # where `specs` came from (for people)


@dataclass(slots=True)
class Op:
    """One op as read: the parsed object and the line it came from (for error messages)."""

    data: dict
    line: int


# --- reading ------------------------------------------------------------------------------

def read_text(path: str) -> str:
    """The file's text (``-`` is stdin; ``.gz`` is decompressed)."""
    try:
        if path == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                raw = f.read()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return raw.decode("utf-8")
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except (OSError, EOFError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read: {err}", path=path) from None


def parse_script(text: str, path: str = "<ops>") -> tuple[ScriptConfig, list[Op]]:
    """Parse either form; raise `InputError` naming the line and field of the first problem."""
    stripped = text.lstrip()
    doc = None
    if stripped.startswith("{"):
        try:
            doc = orjson.loads(text)
        except orjson.JSONDecodeError:
            doc = None  # not one document: JSON lines
    if isinstance(doc, dict) and "ops" in doc:
        if not isinstance(doc["ops"], list):
            raise InputError("must be a list", path=path, line=1, field="ops")
        # Map each op to the line it starts on when the layout is one op a line.
        op_lines = [i + 1 for i, ln in enumerate(text.splitlines()) if '"op"' in ln]
        if len(op_lines) != len(doc["ops"]):
            op_lines = [1] * len(doc["ops"])
        cfg = parse_config(doc.get("config", {}), path, 1)
        ops = [Op(o, ln) for o, ln in zip(doc["ops"], op_lines)]
        for op in ops:
            check_op(op, path)
        return cfg, ops
    cfg_obj = None
    ops: list[Op] = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as err:
            raise InputError(f"not valid JSON ({err})", path=path, line=i) from None
        if cfg_obj is None and not ops and isinstance(obj, dict) and "config" in obj:
            cfg_obj = (obj["config"], i)
            continue
        ops.append(Op(obj, i))
    if cfg_obj is None:
        raise InputError("the first line must be {\"config\": {...}}", path=path, line=1)
    cfg = parse_config(cfg_obj[0], path, cfg_obj[1])
    for op in ops:
        check_op(op, path)
    return cfg, ops


def _int(cfg: dict, key: str, path: str, line: int, minimum: int) -> int:
    v = cfg[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise InputError(f"must be an integer, got {v!r}", path=path, line=line, field=key)
    if v < minimum:
        raise InputError(f"must be >= {minimum}, got {v}", path=path, line=line, field=key)
    return v


def parse_config(obj: Any, path: str, line: int) -> ScriptConfig:
    if not isinstance(obj, dict):
        raise InputError("must be an object", path=path, line=line, field="config")
    unknown = sorted(set(obj) - set(DEFAULTS))
    if unknown:
        raise InputError(f"unknown config key (known: {', '.join(DEFAULTS)})", path=path,
                         line=line, field=unknown[0])
    cfg = {**DEFAULTS, **obj}
    block_size = _int(cfg, "block_size", path, line, 1)
    num_blocks = _int(cfg, "num_blocks", path, line, 1)
    max_model_len = _int(cfg, "max_model_len", path, line, 1)
    if cfg["hash"] not in HASH_FUNCTIONS:
        raise InputError(f"unknown hash {cfg['hash']!r} (one of {', '.join(HASH_FUNCTIONS)})",
                         path=path, line=line, field="hash")
    if cfg["hash_seed"] is not None and not isinstance(cfg["hash_seed"], str):
        raise InputError("must be a string", path=path, line=line, field="hash_seed")
    for key in ("full_sequence_must_fit", "kv_events"):
        if not isinstance(cfg[key], bool):
            raise InputError("must be true or false", path=path, line=line, field=key)
    groups = cfg["groups"]
    if not isinstance(groups, list) or not groups:
        raise InputError("must be a non-empty list", path=path, line=line, field="groups")
    for g in groups:
        try:
            spec_from_group_config(g, block_size)
        except ValueError as err:
            raise InputError(str(err), path=path, line=line) from None
    return ScriptConfig(groups, block_size, num_blocks, cfg["hash"], cfg["hash_seed"],
                        max_model_len, cfg["full_sequence_must_fit"], cfg["kv_events"],
                        given=frozenset(obj))


def load_script(path: str) -> tuple[ScriptConfig, list[Op]]:
    return parse_script(read_text(path), path)


def _positive(name: str, v: int | None) -> None:
    if v is not None and v < 1:
        raise InputError(f"must be >= 1, got {v}", field=name)


GEOMETRY_FLAGS = ("kv_heads", "head_dim", "sliding_window", "sliding_layers",
                  "attention_chunk_size", "chunked_layers")


def with_model(cfg: ScriptConfig, *, model: str | None = None, model_config: str | None = None,
               layers: int | None = None, gpu_memory_gib: float | None = None,
               num_blocks: int | None = None, block_size: int | None = None,
               max_model_len: int | None = None, **geometry) -> ScriptConfig:
    """`cfg` with the command line's overrides applied (flags beat the script's config).

    Without a model only ``block_size``, ``num_blocks`` and ``max_model_len`` change. With one
    (``model`` preset, ``model_config`` path, or ``layers`` + ``geometry``: kv_heads, head_dim,
    sliding_window, sliding_layers, attention_chunk_size, chunked_layers) its KV cache groups
    replace ``groups`` (sized at ``block_size`` by `kvcore.sizing`, which may raise a group's
    block size to unify page sizes), ``num_blocks`` comes from ``gpu_memory_gib`` when given,
    and ``max_model_len`` is the model's unless the flag or the script sets it. Raises
    `InputError` (exit 2) for a combination that makes no sense.
    """
    for name, v in (("block-size", block_size), ("num-blocks", num_blocks),
                    ("max-model-len", max_model_len)):
        _positive(name, v)
    extra = [k for k in GEOMETRY_FLAGS if geometry.get(k) is not None]
    if extra and layers is None:
        flag = "--" + extra[0].replace("_", "-")
        raise InputError(f"{flag} describes a model's layers: give it with --layers "
                         "(and --kv-heads --head-dim), or use --model", field=flag[2:])
    has_model = model is not None or model_config is not None or layers is not None
    if gpu_memory_gib is not None and not has_model:
        raise InputError("needs a model (--model, --model-config or --layers ...) to size "
                         "num_blocks from", field="gpu-memory-gib")
    if gpu_memory_gib is not None and num_blocks is not None:
        raise InputError("give --num-blocks or --gpu-memory-gib, not both", field="num-blocks")
    if block_size is not None:
        cfg.block_size = block_size
    if num_blocks is not None:
        cfg.num_blocks = num_blocks
    if max_model_len is not None:
        cfg.max_model_len = max_model_len
    if not has_model:
        return cfg
    from kvcore.sizing.resolve import resolve_kv_cache_config

    keep_len = max_model_len is not None or "max_model_len" in cfg.given
    res = resolve_kv_cache_config(
        model, model_config=model_config, layers=layers,
        gpu_memory_gib=gpu_memory_gib, block_size=cfg.block_size,
        max_model_len=cfg.max_model_len if keep_len else None, max_concurrent_batches=1,
        num_blocks=None if gpu_memory_gib is not None else cfg.num_blocks,
        check_memory=False, **{k: geometry.get(k) for k in GEOMETRY_FLAGS})
    cfg.specs = list(res.config.kv_cache_groups)
    cfg.groups = [group_config(g.kv_cache_spec) for g in cfg.specs]
    cfg.num_blocks = res.config.num_blocks
    cfg.max_model_len = res.ctx.max_model_len
    cfg.model = model or model_config or "custom geometry"
    return cfg


def group_config(spec) -> dict:
    """An op-script-style description of a group spec: type, block size, window or chunk."""
    from kvcore.specs import kind_of

    first = getattr(spec, "first_spec", spec)   # uniform-type groups: their first layer's spec
    d: dict[str, Any] = {"type": kind_of(spec), "block_size": spec.block_size}
    for key in ("sliding_window", "attention_chunk_size"):
        if getattr(first, key, None):
            d[key] = getattr(first, key)
    return d


def build_manager(cfg: ScriptConfig, tracer=None) -> KVCacheManager:
    """The manager the oracle builds: one pool, every group at ``block_size``; with a model's
    groups, each at its own block size (block hashes at their gcd, scheduling at their lcm)."""
    if cfg.specs is not None:
        return KVCacheManager(KVCacheConfig(cfg.num_blocks, list(cfg.specs)), cfg.max_model_len,
                              max_in_flight_tokens=cfg.max_model_len, enable_caching=True,
                              log_stats=True, enable_kv_cache_events=cfg.kv_events,
                              tracer=tracer)
    groups = [KVCacheGroupSpec((f"layer{i}",), spec_from_group_config(g, cfg.block_size))
              for i, g in enumerate(cfg.groups)]
    return KVCacheManager(KVCacheConfig(cfg.num_blocks, groups), cfg.max_model_len,
                          hash_block_size=cfg.block_size, scheduler_block_size=cfg.block_size,
                          max_in_flight_tokens=cfg.max_model_len, enable_caching=True,
                          log_stats=True, enable_kv_cache_events=cfg.kv_events, tracer=tracer)


def check_op(op: Op, path: str) -> dict:
    """Validate one op's shape; raise `InputError` naming its line and field."""
    d = op.data
    where = {"path": path, "line": op.line}
    if not isinstance(d, dict):
        raise InputError("an op must be a JSON object", **where)
    kind = d.get("op")
    if kind not in OPS:
        raise InputError(f"unknown op {kind!r} (one of {', '.join(OPS)})", field="op",
                         **where)
    if kind == "summary":
        return d
    rid = d.get("id")
    if not isinstance(rid, (str, int)) or isinstance(rid, bool):
        raise InputError("must be a string", field="id", **where)
    if kind == "new":
        p = d.get("prompt")
        if not isinstance(p, list) or not p or not all(
                isinstance(t, int) and not isinstance(t, bool) for t in p):
            raise InputError("must be a non-empty list of integer token ids",
                             field="prompt", **where)
    if kind in ("new", "prefill") and d.get("num_tokens") is not None:
        n = d["num_tokens"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InputError("must be a non-negative integer", field="num_tokens", **where)
    if kind == "decode":
        t = d.get("token", 0)
        if isinstance(t, bool) or not isinstance(t, int):
            raise InputError("must be an integer token id", field="token", **where)
    return d


# --- running ------------------------------------------------------------------------------

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
        d = check_op(op, self.path)
        kind = d["op"]
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


def run_text(text: str, path: str = "<ops>") -> list[dict]:
    cfg, ops = parse_script(text, path)
    return list(run_ops(cfg, ops, path))


__all__ = [
    "Op",
    "ScriptConfig",
    "ScriptRunner",
    "build_manager",
    "load_script",
    "parse_script",
    "read_text",
    "run_ops",
    "run_text",
    "with_model",
]
