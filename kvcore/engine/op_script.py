"""Op scripts, read and checked: scripted KV-cache-manager operations in the oracle's format.

The contract is the oracle's (`shared/oracle/README.md`): input is one JSON document
``{"config": {...}, "ops": [...]}`` or JSON lines (a ``{"config": ...}`` line, then one op a
line), optionally gzipped. `load_script` reads and validates a script (every problem an
`InputError` naming its line and field); `kvcore.engine.script_runner` runs it.

Config keys: ``groups`` (each ``{"type": ...}``, see `kvcore.managers.registry`), ``block_size``
(16), ``num_blocks`` (1024), ``hash`` (sha256), ``hash_seed`` (kvcli's own: the NONE_HASH seed,
default ``"vllm-none-hash"``), ``max_model_len`` (32768), ``full_sequence_must_fit`` (true),
``kv_events`` (false). Ops: ``new``, ``prefill``, ``decode``, ``free``, ``hashes``, ``summary``.

A model (`kvcore.engine.script_model.with_model`: a preset, a config.json or explicit geometry,
as `kvcli config` and the replay take them) replaces the script's ``groups`` with the model's KV
cache groups (full, sliding window, chunked local, Mamba; each at its own block size) and may
size ``num_blocks`` from GPU memory. Precedence: the caller's overrides, then the script's
config, then the defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from kvcore.errors import InputError, floated_integer, shown_value
from kvcore.hashing import HASH_FUNCTIONS
from kvcore.host_memory import check_pool_fits
from kvcore.managers.registry import spec_from_group_config
from kvcore.sources import close_source, open_source, read_text

DEFAULTS: dict[str, Any] = {"groups": [{"type": "full"}], "block_size": 16, "num_blocks": 1024,
                            "hash": "sha256", "hash_seed": None, "max_model_len": 32768,
                            "full_sequence_must_fit": True, "kv_events": False}
OPS = ("new", "prefill", "decode", "free", "hashes", "summary")
# The keys each op reads (the oracle's contract).
OP_KEYS = {"new": frozenset({"op", "id", "prompt", "num_tokens"}),
           "prefill": frozenset({"op", "id", "num_tokens"}),
           "decode": frozenset({"op", "id", "token"}),
           "free": frozenset({"op", "id"}), "hashes": frozenset({"op", "id"}),
           "summary": frozenset({"op"})}


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
    # the multimodal options that changed nothing, as (the option's field, why): to be said
    mm_notes: tuple[tuple[str, str], ...] = ()
    # the config's file and line, where a model refuses one of its keys (its block_size)
    where: tuple[str, int] | None = None


@dataclass(slots=True)
class Op:
    """One op as read: the parsed object and the line it came from (for error messages)."""

    data: dict
    line: int


# --- reading ---------------------------------------------------------------------------

def load_script(path: str) -> tuple[ScriptConfig, list[Op]]:
    """Read and check the script at ``path`` (``-`` is stdin; gzip ok)."""
    name, stream = open_source(path)
    try:
        text = read_text(name, stream)
    finally:
        close_source(stream)
    return parse_script(text, name)


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
        whole = [Op(o, ln) for o, ln in zip(doc["ops"], op_lines)]
        for op in whole:
            check_op(op, path)
        return cfg, whole
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
        raise InputError(f"must be an integer{' below 2^63' if floated_integer(v) else ''}, got "
                         f"{shown_value(v)}", path=path, line=line, field=key)
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
    try:
        check_pool_fits(num_blocks)
    except InputError as err:
        raise InputError(err.message, path=path, line=line, field="num_blocks") from None
    max_model_len = _int(cfg, "max_model_len", path, line, 1)
    if not isinstance(cfg["hash"], str) or cfg["hash"] not in HASH_FUNCTIONS:
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
        if g.get("block_size", block_size) != block_size:
            # a script's groups all run at its block_size: another one was dropped unsaid
            raise InputError(f"a {g['type']} group's block_size {g['block_size']!r} is not the "
                             f"script's {block_size}: its groups run at the script's "
                             "block_size", path=path, line=line, field="groups")
    return ScriptConfig(groups, block_size, num_blocks, cfg["hash"], cfg["hash_seed"],
                        max_model_len, cfg["full_sequence_must_fit"], cfg["kv_events"],
                        given=frozenset(obj), where=(path, line))


def check_op(op: Op, path: str) -> dict:
    """Validate one op's shape; raise `InputError` naming its line and field."""
    d = op.data
    where: dict[str, Any] = {"path": path, "line": op.line}
    if not isinstance(d, dict):
        raise InputError("an op must be a JSON object", **where)
    kind = d.get("op")
    if kind not in OPS:
        raise InputError(f"unknown op {kind!r} (one of {', '.join(OPS)})", field="op",
                         **where)
    unknown = sorted(set(d) - OP_KEYS[kind])
    if unknown:
        # a misspelt key (num_new_tokens for num_tokens) ran the op without it, silently
        raise InputError(f"unknown key(s) {unknown} for op {kind!r} (it takes "
                         f"{', '.join(sorted(OP_KEYS[kind]))})", field=unknown[0], **where)
    if kind == "summary":
        return d
    rid = d.get("id")
    if not isinstance(rid, (str, int)) or isinstance(rid, bool):
        raise InputError("must be a string", field="id", **where)
    if kind == "new":
        p = d.get("prompt")
        if isinstance(p, list) and (big := next((t for t in p if floated_integer(t)), None)):
            raise InputError(f"must hold integers below 2^64, got {shown_value(big)}",
                             field="prompt", **where)
        if not isinstance(p, list) or not p or not all(
                isinstance(t, int) and not isinstance(t, bool) for t in p):
            raise InputError("must be a non-empty list of integer token ids",
                             field="prompt", **where)
        if (bad := next((t for t in p if t < 0), None)) is not None:
            # (ran, hashed as given: a trace refuses it in these words, and a token id is
            # an index into a vocabulary)
            raise InputError(f"must hold non-negative integers, got {bad}", field="prompt",
                             **where)
    if kind in ("new", "prefill") and d.get("num_tokens") is not None:
        n = d["num_tokens"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InputError("must be a non-negative integer", field="num_tokens", **where)
    if kind == "decode":
        t = d.get("token", 0)
        if isinstance(t, bool) or not isinstance(t, int):
            raise InputError("must be an integer token id" + (
                f" below 2^64, got {shown_value(t)}" if floated_integer(t) else ""),
                field="token", **where)
        if t < 0:
            raise InputError(f"must be >= 0, got {t}", field="token", **where)
    return d

