"""`CPUOffloadingManager`: the CPU tier's slots, reference counts, offers and events.

vLLM 0.33's `v1/kv_offload/cpu/manager.py`, with the policy (`policy.py`) deciding order and
victims; what it reports (its events drained, its stats) is `manager_reports.py`. The rules in
words (docs/offload.md has them for users):

* Slots: never-used slots first, in increasing order, then freed slots last-freed first.
* `prepare_store(keys)` is one request's offer, all or nothing: the absent keys (after the
  optional `store_threshold` filter) need ``absent - free`` victims, taken by the policy among
  idle chunks outside the offer; if it cannot, the offer fails (None) and only the bookkeeping
  before allocation stays (offer counts, ARC's ghost adaptation, the request's observations).
  Present keys are not copied again; ready ones count as the request's reuse.
* A stored chunk is readable (`lookup` says HIT) only after `complete_store`; a load pins its
  chunks (`prepare_load`) until `complete_load`.
* `on_request_finished` hands the policy everything the request observed, once.
"""

from __future__ import annotations

from kvcore.offload.access import finish_groups, observe, observe_at, observe_offer, positions_of
from kvcore.offload.keys import (
    HIT,
    HIT_PENDING,
    MISS,
    NO_KEY,
    ChunkStatus,
    ReqContext,
    RequestCacheAccess,
    StoreOffer,
    TierEvent,
)
from kvcore.offload.misuse import OffloadMisuse
from kvcore.offload.offer_counts import OfferCounts
from kvcore.offload.policy import make_policy


class CPUOffloadingManager:
    def __init__(self, num_chunks: int, policy: str = "lru", enable_events: bool = False,
                 store_threshold: int = 0, max_tracker_size: int = 64_000,
                 one_group: bool = False) -> None:
        self.num_chunks = num_chunks
        self.policy = make_policy(policy, num_chunks)
        self.events: list[TierEvent] | None = [] if enable_events else None
        self.num_allocated = 0                # slots ever handed out (fresh ones come first)
        # freed slots, last freed last; each keeps its status object, reused when the slot is
        # handed out again (one object per slot: no allocation per stored chunk)
        self.free_list: list[ChunkStatus] = []
        self.num_evictable = 0                # resident with ref count 0
        self.num_write_pending = 0            # resident with ref count -1
        self.store_threshold = store_threshold
        # offers seen per key (only with a threshold of 2 or more)
        self.counts = OfferCounts(max_tracker_size) if store_threshold >= 2 else None
        self.skipped = 0                      # stats interval: keys held back by the threshold
        # stats interval: keys per non-empty offer, as {keys: offers} (a list grew by one entry
        # an offer for a whole replay when nothing read the stats; a run has few sizes)
        self.allocation_sizes: dict[int, int] = {}
        self.generation = 0
        self.one_group = one_group      # every key is group 0's (the connector's)
        # keys absent from the tier in the last offer, before the threshold (the step lines'
        # `store_offers` count)
        self.offered_absent = 0

    # -- slots -------------------------------------------------------------------------------
    @property
    def num_free(self) -> int:
        return len(self.free_list) + self.num_chunks - self.num_allocated

    def _allocate(self, keys: list[bytes]) -> list[ChunkStatus]:
        """A slot's status for each key (its ``key`` set, its store in flight)."""
        n = len(keys)
        fresh = min(n, self.num_chunks - self.num_allocated)
        base = self.num_allocated
        out = [ChunkStatus(base + i, keys[i]) for i in range(fresh)]
        self.num_allocated += fresh
        free = self.free_list
        for i in range(fresh, n):
            chunk = free.pop()
            chunk.ref_cnt = -1
            chunk.key = keys[i]
            out.append(chunk)
        return out

    # -- per-request observations --------------------------------------------------------------
    def _access(self, ctx: ReqContext) -> RequestCacheAccess:
        state = ctx.access
        if state is None or state.generation != self.generation:
            state = ctx.access = RequestCacheAccess(self.generation)
        return state

    # -- the manager's calls ---------------------------------------------------------------------
    def on_new_request(self, ctx: ReqContext) -> None:
        self._access(ctx)

    def lookup(self, key: bytes) -> str:
        chunk = self.policy.get(key)
        if chunk is None:
            return MISS
        return HIT if chunk.is_ready else HIT_PENDING

    def prepare_load(self, keys: list[bytes], ctx: ReqContext, first: int = -1) -> list[int]:
        """Pin the chunks for a load; their slots, in order. ``first``: the chunk index of
        ``keys[0]`` in ``ctx.chunk_keys`` (the keys are consecutive chunks), -1 without."""
        slots = []
        for key in keys:
            chunk = self.policy.get(key)
            if chunk is None:
                raise OffloadMisuse("Chunk {} not found in cache", key)
            if not chunk.is_ready:
                raise OffloadMisuse("Chunk {} is not ready for reading", key)
            if chunk.ref_cnt == 0:
                self.policy.mark_non_evictable(key)
                self.num_evictable -= 1
            chunk.ref_cnt += 1
            slots.append(chunk.chunk_id)
        state = self._access(ctx)
        if first >= 0:
            observe_at(self.policy, state, keys, first, ctx, None, keys, None)
        else:
            observe(self.policy, state, keys, ctx, self.one_group, keys, None)
        return slots

    def complete_load(self, keys: list[bytes]) -> None:
        for key in keys:
            chunk = self.policy.get(key)
            if chunk is None:
                raise OffloadMisuse("Chunk {} not found", key)
            if chunk.ref_cnt <= 0:
                raise OffloadMisuse("Chunk {} ref_cnt is already 0", key)
            chunk.ref_cnt -= 1
            if chunk.ref_cnt == 0:
                self.num_evictable += 1
                self.policy.mark_evictable(key)

    def touch(self, keys: list[bytes], ctx: ReqContext) -> None:
        self.policy.touch(keys, ctx)

    def prepare_store(self, keys: list[bytes], ctx: ReqContext, first: int = -1
                      ) -> StoreOffer | None:
        """One request's offer; None when the victims it needs cannot be found. ``first``: as
        `prepare_load`'s."""
        if self.counts is not None:
            self.counts.count(keys)
        policy = self.policy
        absent: list[bytes] = []
        ready: list[bytes] = []
        for key, chunk in zip(keys, policy.get_many(keys)):
            if chunk is None:
                absent.append(key)
            elif chunk.ref_cnt >= 0:
                ready.append(key)           # present and still being written: ignored
        self.offered_absent = len(absent)
        if self.counts is not None:
            counts, threshold = self.counts, self.store_threshold
            kept = [k for k in absent if counts.get(k, 0) >= threshold]
            self.skipped += len(absent) - len(kept)
            absent = kept
        state = self._access(ctx)
        if policy.watches_store_misses:
            misses = [k for k in absent if k not in state.store_missed]
            if misses:
                policy.on_store_miss(misses, ctx)  # before insert() takes a key off a ghost list
                state.store_missed.update(misses)
        observe_offer(policy, state, keys, first, ctx, self.one_group, absent, ready)
        if not absent:
            return StoreOffer([], [], [])
        sizes = self.allocation_sizes
        sizes[len(absent)] = sizes.get(len(absent), 0) + 1
        need = len(absent) - self.num_free
        evicted: list[bytes] = []
        if need > 0:
            if need > self.num_evictable:
                return None
            # Only the offer's resident keys can be passed over (an absent key is not there to
            # evict, a pending one is not idle): the set of those alone, mostly empty.
            victims = policy.evict(need, set(ready), self.free_list)
            if victims is None:
                return None
            self.num_evictable -= len(victims)
            evicted = victims
            if self.events is not None:
                self.events.append(TierEvent(evicted, removed=True))
        chunks = self._allocate(absent)
        policy.insert_many(absent, chunks, ctx, None if first < 0 else
                           positions_of(keys, first, ctx.tokens_per_chunk, absent))
        self.num_write_pending += len(absent)
        if policy.watches_reuse:
            state.inserted.update(absent)
        return StoreOffer(absent, [c.chunk_id for c in chunks], evicted, chunks)

    def complete_store(self, keys: list[bytes], success: bool = True,
                       chunks: list[ChunkStatus] | None = None) -> tuple[list, list]:
        """The copy of these keys finished (or failed): (keys now readable, keys dropped).
        ``chunks``: the statuses `prepare_store` gave them (the connector's store jobs), read
        instead of looking each key up while a status is still its key's (with the eviction's
        key check on the status: offload_speed's workload compiled 2.60 -> 2.48 s CPU with the
        tier, medians of 7)."""
        stored: list[bytes] = []
        stored_chunks: list[ChunkStatus] = []
        removed: list[bytes] = []
        policy = self.policy
        if success:
            found: list[ChunkStatus | None] = policy.get_many(keys) if chunks is None \
                else list(chunks)
            get = policy.get
            for key, chunk in zip(keys, found):
                if chunk is not None and chunk.key is not key:
                    chunk = get(key)        # (its slot moved on: whatever the key has now)
                if chunk is not None and chunk.ref_cnt < 0:
                    chunk.ref_cnt = 0
                    stored.append(key)
                    stored_chunks.append(chunk)
        else:
            get = policy.get
            for key in keys:
                chunk = get(key)   # (one at a time: a failed store removes keys as it goes)
                if chunk is None or chunk.ref_cnt >= 0:
                    continue
                policy.remove(key)
                chunk.key = NO_KEY
                self.free_list.append(chunk)
                removed.append(key)
        self.num_write_pending -= len(stored) + len(removed)
        if stored:
            self.num_evictable += len(stored)
            policy.mark_evictable_many(stored, stored_chunks)
        if self.events is not None:
            if removed:
                self.events.append(TierEvent(removed, removed=True, metadata_only=True))
            if stored:
                self.events.append(TierEvent(stored, removed=False))
        return stored, removed

    def on_request_finished(self, ctx: ReqContext) -> None:
        state = ctx.access
        if state is None or state.generation != self.generation or state.finished:
            return
        state.finished = True
        self.policy.on_request_finished(finish_groups(state, ctx), state.inserted - state.reused,
                                        state.reused, ctx)

    def reset(self) -> None:
        """Drop every chunk (vLLM's `reset_cache`); requests start new observations."""
        for key in list(self.policy.resident()):
            chunk = self.policy.get(key)
            if chunk is not None:
                chunk.key = NO_KEY      # (a store job's status no longer stands for its key)
        self.policy.clear()
        self.generation += 1
        self.num_evictable = 0
        self.num_write_pending = 0
        self.free_list.clear()
        self.num_allocated = 0
