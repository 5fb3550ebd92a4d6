"""Call trees through the KV cache stack's four layers, for people reading vLLM's source.

`CallRecorder` is a context manager: while it is active, the methods vLLM's KV cache operations
go through -- `KVCacheManager` (the scheduler's facade) -> a `KVCacheCoordinator` (one manager per
KV cache group) -> the `SingleTypeKVCacheManager` subclasses -> `BlockPool` ->
`FreeKVCacheBlockQueue` -- record who called whom, with the arguments that matter and what each
returned (block ids, hit lengths), as `CallNode` trees. It patches those methods on entry and puts
the originals back on exit, so a run without it pays nothing.

While recording, the manager's short decode path is off (`KVCacheManager.all_groups_plain`): it
calls the managers directly, where vLLM's `allocate_slots` goes through the coordinator; the
general path it then takes gives the same blocks (it is the reference the short path is checked
against). `BlockPool.get_new_blocks` pops the free queue and evicts in one inlined loop; its node
gets the children vLLM's method has: `FreeKVCacheBlockQueue.popleft_n` and one
`BlockPool._maybe_evict_cached_block` per popped block when caching is on (False where the block
held no hash). `BlockPool.free_blocks`
links the released blocks in one pass; its node gets vLLM's `prepend_n` and `append_n`. And
vLLM's `allocate_slots` calls `remove_skipped_blocks` on every manager (full attention's
returns at once), where kvcore calls only the managers that can free something: while
recording, every manager is called.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Self


@dataclass(slots=True)
class CallNode:
    call: str                       # "Class.method", vLLM's names
    args: dict[str, Any]
    returns: Any = None
    children: list[CallNode] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"call": self.call, "args": self.args, "returns": self.returns,
                "children": [c.to_dict() for c in self.children]}


def _ids(value: Any) -> Any:
    """Blocks as ids: a block, a list of blocks, per-group lists, `KVCacheBlocks`."""
    from kvcore.block import KVCacheBlock

    if isinstance(value, KVCacheBlock):
        return value.block_id
    blocks = getattr(value, "blocks", None)           # KVCacheBlocks
    if blocks is not None and not isinstance(value, (list, tuple)):
        return [_ids(g) for g in blocks]
    if isinstance(value, (list, tuple)):
        return [_ids(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return type(value).__name__     # e.g. a one-shot iterator: never consumed here


def _arg(name: str, value: Any) -> Any:
    if name in ("request", "req"):
        return getattr(value, "request_id", value)
    if name == "block_hashes":
        return f"{len(value)} hashes"
    if name == "ordered_blocks" and isinstance(value, list):
        # vLLM frees reversed(trim_null_head(table)): a sliding window's nulls at the head of
        # the table (the tail of this list) are not passed
        end = len(value)
        while end and value[end - 1].is_null:
            end -= 1
        return _ids(value[:end])
    return _ids(value)


# (module, class, methods): the layers, top to bottom; subclasses that define a method too are
# patched by `_classes`.
LAYERS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("kvcore.kv_cache_manager", "KVCacheManager",
     ("get_computed_blocks", "allocate_slots", "free", "cache_blocks")),
    ("kvcore.coordinator", "KVCacheCoordinator",
     ("find_longest_cache_hit", "get_num_blocks_to_allocate", "remove_skipped_blocks",
      "allocate_new_computed_blocks", "allocate_new_blocks", "cache_blocks", "free")),
    # (the managers' root: `free` and `remove_skipped_blocks` are defined there, in tables.py;
    # the coordinator's allocate_new_computed_blocks calls add_local_computed_blocks on each,
    # then, for a KV connector's (the CPU tier's) tokens, allocate_external_computed_blocks)
    ("kvcore.managers.tables", "BlockTables",
     ("find_longest_cache_hit", "get_num_blocks_to_allocate", "remove_skipped_blocks",
      "add_local_computed_blocks", "allocate_external_computed_blocks", "allocate_new_blocks",
      "cache_blocks", "free")),
    ("kvcore.block_pool", "BlockPool",
     ("get_new_blocks", "touch", "free_blocks", "cache_full_blocks")),
    ("kvcore.free_queue", "FreeKVCacheBlockQueue",
     ("popleft_n", "remove", "remove_n", "append_n", "prepend_n")),
)
# (and kvcore's own: `free_blocks`' ``trace``, the freed blocks' lists for the event stream)
SKIP_ARGS = frozenset({"self", "cls", "kv_cache_spec", "block_pool", "kv_cache_group_ids",
                       "trace"})


def _classes(base: type) -> list[type]:
    out, todo = [], [base]
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(c.__subclasses__())
    return out


class CallRecorder:
    """Record call trees while active; `take()` returns (and forgets) the roots so far.
    ``depth`` limits the tree: 1 is the facade alone, 2 adds the coordinator, and so on. With
    ``request``, only the trees of calls made for that request are kept (`replay --explain`),
    each root tagged with ``tag()`` (e.g. the engine step)."""

    def __init__(self, depth: int | None = None, request: str | None = None,
                 tag: Any = None, every_manager: bool = False) -> None:
        self.depth = depth
        self.request = request
        self.tag = tag
        self._muted = 0                 # inside a root call made for another request
        self.every_manager = every_manager      # `watch` each KVCacheManager built meanwhile
        self.roots: list[CallNode] = []
        self._stack: list[CallNode] = []
        self._saved: list[tuple[type, str, Any]] = []
        self._managers: list[Any] = []
        self._lookups: list[tuple[Any, Any]] = []

    def take(self) -> list[CallNode]:
        roots, self.roots = self.roots, []
        return roots

    def watch(self, kvm: Any) -> None:
        """Turn the manager's short decode path and decode windows (`kvcore.quiet_steps`: they
        skip calls) off while recording; let every manager's `remove_skipped_blocks` run (see
        the module doc)."""
        coord = kvm.coordinator
        self._managers.append((kvm, kvm.all_groups_plain, coord.skipping_managers,
                               kvm.windowable, kvm.lookup_memo))
        kvm.all_groups_plain = kvm.windowable = False
        kvm.lookup_memo = None          # (a kept lookup skips find_longest_cache_hit's call)
        kvm.block_pool.lookup_watch = None
        coord.skipping_managers = tuple(coord.single_type_managers)

    def __enter__(self) -> Self:
        import importlib
        import inspect

        from kvcore import compiled

        if compiled.active():
            # kvcli's --calls sets KVCLI_PURE before kvcore is imported (kvcli/__init__.py).
            raise RuntimeError("the call recorder patches the stack's Python methods, which the "
                               "compiled build's classes do not allow: set KVCLI_PURE=1")

        for level, (module, name, methods) in enumerate(LAYERS, start=1):
            base = getattr(importlib.import_module(module), name)
            for cls in _classes(base):
                for meth in methods:
                    raw = cls.__dict__.get(meth)
                    if raw is None:
                        continue
                    fn = raw.__func__ if isinstance(raw, classmethod) else raw
                    params = list(inspect.signature(fn).parameters)
                    wrapped = self._wrap(fn, meth, level, params, isinstance(raw, classmethod))
                    self._saved.append((cls, meth, raw))
                    setattr(cls, meth, classmethod(wrapped) if isinstance(raw, classmethod)
                            else wrapped)
        if self.every_manager:
            from kvcore.kv_cache_manager import KVCacheManager

            init = KVCacheManager.__init__
            rec = self

            def watched_init(kvm: Any, *args: Any, **kw: Any) -> None:
                init(kvm, *args, **kw)
                rec.watch(kvm)
            self._saved.append((KVCacheManager, "__init__", init))
            KVCacheManager.__init__ = watched_init      # type: ignore[method-assign,assignment]
        for kvm, *_ in self._managers:
            coord = kvm.coordinator
            if hasattr(coord, "_lookup"):       # the one-group coordinator's bound lookup
                self._lookups.append((coord, coord._lookup))
                coord._lookup = type(coord._manager).find_longest_cache_hit
        return self

    def __exit__(self, *exc: object) -> None:
        for coord, lookup in self._lookups:
            coord._lookup = lookup
        self._lookups.clear()
        for cls, meth, raw in reversed(self._saved):
            setattr(cls, meth, raw)
        self._saved.clear()
        for kvm, plain, skipping, windowable, memo in self._managers:
            kvm.all_groups_plain = plain
            kvm.windowable = windowable
            if memo is not None:
                memo.forget()
            kvm.lookup_memo = memo
            kvm.coordinator.skipping_managers = skipping
        self._managers.clear()

    def _wrap(self, fn: Any, meth: str, level: int, params: list[str], is_cls: bool) -> Any:
        rec = self

        def traced(first: Any, *args: Any, **kw: Any) -> Any:
            if rec._muted or (rec.depth is not None and level > rec.depth):
                return fn(first, *args, **kw)
            owner = first if is_cls else type(first)
            named = dict(zip(params[1:], args))
            named.update(kw)
            if not rec._stack and rec.request is not None:
                who = named.get("request")
                if getattr(who, "request_id", who) != rec.request:
                    rec._muted += 1             # another request's call: run it unrecorded
                    try:
                        return fn(first, *args, **kw)
                    finally:
                        rec._muted -= 1
            node = CallNode(f"{owner.__name__}.{meth}",
                            {k: _arg(k, v) for k, v in named.items() if k not in SKIP_ARGS})
            if not rec._stack and rec.tag is not None:
                node.args = {**rec.tag(), **node.args}
            (rec._stack[-1].children if rec._stack else rec.roots).append(node)
            if rec.depth is None or level + 1 <= rec.depth:
                if meth == "get_new_blocks":
                    rec._pop_children(first, named.get("num_blocks", 0), node)
                elif meth == "free_blocks":
                    rec._free_children(first, named.get("ordered_blocks"), node)
            rec._stack.append(node)
            try:
                result = fn(first, *args, **kw)
            finally:
                rec._stack.pop()
            node.returns = _returns(meth, result)
            return result
        traced.__wrapped__ = fn                 # type: ignore[attr-defined]
        return traced

    @staticmethod
    def _pop_children(pool: Any, n: int, node: CallNode) -> None:
        """vLLM's get_new_blocks: popleft_n, then, with caching on, `_maybe_evict_cached_block`
        on every popped block (True where it held a hash and lost it)."""
        blk = pool.free_block_queue.fake_free_list_head.next_free_block
        popped = []
        for _ in range(n):
            popped.append(blk)
            blk = blk.next_free_block
        node.children.append(CallNode("FreeKVCacheBlockQueue.popleft_n", {"n": n},
                                      [b.block_id for b in popped]))
        if pool.enable_caching:         # (vLLM asks of every popped block, hashed or not)
            for b in popped:
                node.children.append(CallNode("BlockPool._maybe_evict_cached_block",
                                              {"block": b.block_id}, b.block_hash is not None))


    @staticmethod
    def _free_children(pool: Any, ordered: Any, node: CallNode) -> None:
        """vLLM's free_blocks: the blocks reaching 0 references go back through
        `FreeKVCacheBlockQueue.prepend_n` (no hash, or no caching: reused first) and then
        `append_n` (hashed: evicted last), both always called (kvcore links them in one pass)."""
        if not isinstance(ordered, (list, tuple)):
            return                      # (a one-shot iterator: never consumed here)
        first: list[Any] = []
        last: list[Any] = []
        for b in ordered:
            if not b.is_null and b.ref_cnt == 1:
                (last if b.block_hash is not None and pool.enable_caching else first).append(
                    b.block_id)
        node.children.append(CallNode("FreeKVCacheBlockQueue.prepend_n", {"blocks": first}))
        node.children.append(CallNode("FreeKVCacheBlockQueue.append_n", {"blocks": last}))


def _returns(meth: str, result: Any) -> Any:
    if meth == "find_longest_cache_hit" or meth == "get_computed_blocks":
        blocks, hit = result[0], result[1]
        return {"blocks": _ids(blocks), "hit_tokens": hit}
    if result is None or isinstance(result, (bool, int, str)):
        return result
    return _ids(result)
