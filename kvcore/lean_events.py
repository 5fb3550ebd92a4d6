"""`LeanBatch`: one step's prefix-cache changes as block hashes, for an in-process index only.

A cluster replica behind an event-fed router whose vLLM KV events are neither written
(`--events DIR`) nor published (`--kv-events-endpoint`) has one reader of them: the router's
`EventIndex`, which keeps, per replica and medium, how many cache entries hold each hash. It
needs the hashes stored and removed and whether the cache was cleared, nothing else of vLLM's
`BlockStored` (token ids, extra keys, LoRA, spec kind) or `BlockRemoved`, and their 64-bit form
only when it applies them. So the pool, told `lean_events`, queues the step's hashes here
instead of building vLLM's events (measured in `kvcore/block_pool.py`, `cache_full_blocks`).

Why the index gets the same counts from a `LeanBatch` as from the step's vLLM events, though it
applies the stores before the removals and not in the events' order: the pool announces every
entry it puts in its hash map (`BlockStored`) and every one it takes out (`BlockRemoved`, only
for an entry that was there), so an index fed every batch from the start counts, per 64-bit
hash, exactly the map's entries under it. A removal therefore always finds a count of at least
one, never clamps at zero, and +1 / -1 steps commute. A reset (`AllBlocksCleared`) wipes what
came before it in the step: the batch drops those and says `cleared` (the index forgets the
replica, both media, before the stores; the CPU tier's events follow the pool's in a step, as
vLLM publishes them). A step whose only event is an empty `BlockStored` (a sparse-retention
sliding group's decode block) changes no count: it gives no batch, and an index delivery that
changes nothing changes no decision.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kvcore.kv_events import KVCacheEvent


@dataclass(slots=True)
class LeanBatch(KVCacheEvent):
    """The hashes the (GPU) pool stored and removed since its last `take_events` (after a reset,
    only those after it, with `cleared`). kvcli's, not vLLM's: it rides in the pool's event list
    only so that the engine loops hand it on unchanged."""

    # the pool's own hashes (bytes): the index turns a step's into their 64-bit event form in
    # one pass when it applies them (`kvcore.engine.hash_json.hash_ints`)
    stored: list[bytes] = field(default_factory=list)
    removed: list[bytes] = field(default_factory=list)
    cleared: bool = False

    def __bool__(self) -> bool:
        return self.cleared or bool(self.stored) or bool(self.removed)

    def to_dict(self) -> dict:
        """Never written: vLLM's events are built whenever anything writes or publishes them."""
        raise TypeError("a LeanBatch feeds an in-process index only; it has no vLLM form")
