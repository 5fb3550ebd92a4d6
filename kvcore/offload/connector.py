"""`OffloadingConnector`: the scheduler side of vLLM 0.33's native CPU offloading.

vLLM's `OffloadingConnectorScheduler` (`distributed/kv_transfer/kv_connector/v1/offloading/
scheduler.py`) for one full-attention KV cache group, called where vLLM's `Scheduler` calls its
connector (`kvcore/engine/scheduler_offload.py`):

* `get_num_new_matched_tokens(req, L)` at the admission of a waiting request with no computed
  tokens: how many tokens past the local GPU hit ``L`` the CPU tier can load (whole chunks from
  chunk ``L // C``, up to the whole prompt, at least one chunk), or None ("not yet": a chunk of
  the hit is still being stored or is being loaded by another request, or the request still
  has transfers in flight);
* `update_state_after_alloc(req, ext)` after the allocation: the load job (its chunks pinned);
* `build_connector_meta(...)` at the end of `schedule()` (`stores.py`): flushes, store offers,
  the finished requests' final offers and recency commits;
* `update_connector_output(conn, done)` when the worker reports jobs; `request_finished(conn,
  req)` when a request finishes, its GPU blocks freed at once (both in `completions.py`).

Chunks are ``blocks_per_chunk`` GPU blocks; chunk i covers tokens ``[i*C, (i+1)*C)`` and is keyed
by the hash of its last block, without vLLM's group suffix (`keys.key_int`). Several KV cache
groups: `hybrid.HybridConnector`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvcore.kv_events import MEDIUM_CPU, BlockRemoved, BlockStored
from kvcore.offload.completions import unfence
from kvcore.offload.config import OffloadConfig
from kvcore.offload.jobs import Job, RequestOffloadState
from kvcore.offload.keys import HIT_PENDING, MISS, ReqContext, key_int
from kvcore.offload.manager import CPUOffloadingManager
from kvcore.offload.manager_reports import drain_events
from kvcore.offload.record import StepRecord
from kvcore.request import Request

if TYPE_CHECKING:
    from kvcore.block import KVCacheBlock
    from kvcore.kv_cache_manager import KVCacheManager


class OffloadingConnector:
    def __init__(self, cfg: OffloadConfig, kvm: KVCacheManager, *,
                 enable_prefix_caching: bool = True,
                 enable_events: bool = False) -> None:
        self.cfg = cfg
        self.kvm = kvm
        self.hybrid = False     # several KV cache groups: `hybrid.HybridConnector`
        # the group holds an EAGLE/MTP draft's layers: its trailing chunk is volatile (`eagle`)
        self.eagle = 0 in cfg.eagle_groups
        self.manager = CPUOffloadingManager(cfg.num_chunks, cfg.policy,
                                            enable_events=enable_events,
                                            store_threshold=cfg.store_threshold,
                                            max_tracker_size=cfg.max_tracker_size,
                                            one_group=True)
        self.enable_events = enable_events
        self.states: dict[str, RequestOffloadState] = {}
        self.jobs: dict[int, Job] = {}
        self.next_job = 0
        # this step's
        self.load_jobs: dict[int, Job] = {}
        self.sync_loads: set[str] = set()
        self.sync_load_bytes = 0
        self.jobs_to_flush: set[int] = set()
        # GPU blocks handed out this step (hits included), as the lists they came in; their ids
        # as a set only when a flush check asks (`allocated_ids`: with no store watching a
        # block, none does)
        self.handed_out: list[list[KVCacheBlock]] = []
        self._allocated: set[int] | None = None
        # block id -> pending store jobs reading it (finished requests' stores only)
        self.fenced: dict[int, set[int]] = {}
        self.being_loaded: set[bytes] | None = set() if enable_prefix_caching else None
        self.rec = StepRecord()               # what this step did, for the outputs
        self.failures = 0                     # vLLM's kv_offload_allocation_failure
        # requests whose lookup said "not yet" and has not resolved since (vLLM's
        # `deferred_lookup_start_time` is set: its async lookup delay runs)
        self.deferred_open: set[str] = set()
        # Requests whose last store offer failed: offered again every step they are scheduled,
        # so no decode window opens for them (`stores.build_connector_meta` skips windows).
        self.offer_failed: set[str] = set()

    # -- requests ----------------------------------------------------------------------------
    def on_new_request(self, req: Request) -> None:
        keys: list[bytes] = []
        ctx = ReqContext(req.request_id, keys, self.cfg.tokens_per_chunk)
        self.manager.on_new_request(ctx)
        self.states[req.request_id] = RequestOffloadState(req, ctx, keys)

    def has_pending_work(self) -> bool:
        return bool(self.jobs)

    def _new_job_id(self) -> int:
        self.next_job += 1
        return self.next_job - 1

    # -- lookup --------------------------------------------------------------------------------
    def get_num_new_matched_tokens(self, req: Request, num_local: int) -> tuple[int | None, bool]:
        """(tokens the tier can load past ``num_local`` or None for "not yet", asynchronously)."""
        st = self._all_states()[req.request_id]
        self._restart(st)
        if st.jobs:
            self.rec.deferred.append(req.request_id)
            return None, False
        self.update_keys(st)
        st.num_local = num_local
        hit = 0 if req.skip_reading_prefix_cache else self._lookup(st)
        rid = req.request_id
        # vLLM times a deferral from the first lookup that says "not yet" (not from a deferral
        # for transfers in flight, above: no lookup) to the next lookup that answers
        if hit is None:
            self.rec.deferred.append(rid)
            if rid not in self.deferred_open:
                self.deferred_open.add(rid)
                self.rec.delays_opened.append(rid)
            return None, False
        if self.deferred_open and rid in self.deferred_open:
            self.deferred_open.discard(rid)
            self.rec.delays_closed.append(rid)
        sync = self._reserve_sync_load(st.req, num_local, hit)
        return hit, bool(hit) and not sync

    # (one group; `hybrid.HybridConnector` keeps its own states, restart, keys and lookup)
    def _all_states(self) -> dict[str, Any]:
        return self.states

    def _restart(self, st: Any) -> None:
        """A lookup restarts the request at token 0: every chunk is offered again."""
        st.blocks = []
        st.n_seen = 0
        st.next_stored = 0

    def update_keys(self, st: Any) -> None:
        st.update_keys(self.cfg.blocks_per_chunk)

    def _lookup(self, st: Any) -> int | None:
        c = self.cfg.tokens_per_chunk
        local = st.num_local
        keys = st.keys
        top = min(st.req.num_tokens, len(keys) * c)     # no -1: the whole prompt may hit
        if top - local < c:
            return 0
        start = local // c
        hits = 0
        pending = False
        manager = self.manager
        # (by index: a waiting head is looked up every step, and a slice would copy its keys;
        # the manager's method called directly: native in the compiled build)
        for i in range(start, -(-top // c)):
            r = manager.lookup(keys[i])
            if r == MISS:
                break
            hits += 1
            pending |= r == HIT_PENDING
        if hits == 0:
            return 0
        if pending:
            return None               # a chunk of the hit is still being written
        if self.eagle:
            hits -= 1                 # the volatile trailing chunk (`eagle`)
        top = min(top, c * (start + hits))
        if top - local < c:
            return 0
        hit = top - local
        if self.being_loaded and any(k in self.being_loaded
                                     for k in keys[start:-(-(local + hit) // c)]):
            return None               # another request is loading some of these chunks
        return hit

    def _reserve_sync_load(self, req: Request, local: int, hit: int) -> bool:
        rid = req.request_id
        self.sync_loads.discard(rid)
        budget = self.cfg.sync_load_budget_bytes
        if not budget or not hit or local + hit >= req.num_tokens:
            return False
        n = hit * self.cfg.kv_bytes_per_token
        if self.sync_load_bytes + n > budget:
            return False
        self.sync_load_bytes += n
        self.sync_loads.add(rid)
        return True

    # -- after the allocation ------------------------------------------------------------------
    def update_state_after_alloc(self, req: Request, ext: int) -> int:
        """The admission allocated (hits included): note its blocks; with ``ext`` loaded tokens,
        the load job. Returns the hit tokens its chunks cover (vLLM's ``load_key_ranges``: from
        the first fresh GPU block on; none when all were hashed already, as in a reload)."""
        blocks = self.kvm.coordinator.get_blocks(req.request_id)[0]
        self.handed_out.append(blocks)
        if ext == 0:
            return 0
        cfg = self.cfg
        rid = req.request_id
        st = self.states[rid]
        sync = rid in self.sync_loads
        local = st.num_local
        cached = local + ext
        bs, c, bpc = cfg.block_size, cfg.tokens_per_chunk, cfg.blocks_per_chunk
        n_gpu = -(-cached // bs)
        start_block = first_loaded_block(blocks, local, n_gpu, bs, sync)
        n_chunks = -(-cached // c)
        keys = st.keys[start_block // bpc:n_chunks] if n_gpu > start_block else []
        dst = [b.block_id for b in blocks[start_block:n_gpu]]
        st.next_stored = n_chunks     # neither the loaded chunks nor the hit before are offered
        slots = self.manager.prepare_load(keys, st.ctx, start_block // bpc)
        self._start_load(st.jobs, Job(self._new_job_id(), rid, keys, dst, slots,
                                      is_store=False, sync=sync))
        return cached - start_block * bs if keys else 0

    def _start_load(self, req_jobs: set[int], job: Job) -> None:
        """Register load ``job`` with the step and its request (``req_jobs``: its jobs, none in
        flight); an async one's keys are being loaded until it completes (a lookup waits)."""
        self.load_jobs[job.job_id] = job
        assert not req_jobs
        req_jobs.add(job.job_id)
        self.jobs[job.job_id] = job
        if self.being_loaded is not None and not job.sync:
            self.being_loaded.update(job.keys)

    def allocated_ids(self) -> set[int]:
        """The ids of the GPU blocks handed out this step (the null block left out)."""
        if self._allocated is None:
            ids: set[int] = set()
            for blocks in self.handed_out:
                ids.update([b.block_id for b in blocks])
            ids.discard(0)
            self._allocated = ids
        return self._allocated

    def end_step(self) -> None:
        """Forget this step's handed-out blocks."""
        self.handed_out = []
        self._allocated = None

    # -- finish and completions (`completions.py`; the hook they call) ------------------------
    def _unfence_job(self, jid: int, job: Job, finished: bool) -> None:
        """A reported job no longer holds back the blocks it read (a finished request's)."""
        if finished:
            unfence(self.fenced, jid, job.fence_block_ids)

    # -- events ----------------------------------------------------------------------------------
    def take_events(self) -> list:
        """The tier's events in vLLM's form: one `BlockStored` per chunk stored (placeholder
        payload: the chunk key's hash only), one `BlockRemoved` per eviction batch."""
        out: list = []
        for ev in drain_events(self.manager):
            if ev.removed:
                if not ev.metadata_only:
                    out.append(BlockRemoved([key_int(k) for k in ev.keys],
                                            MEDIUM_CPU, 0))
                continue
            out.extend(BlockStored([key_int(k)], None, [], 0, None, MEDIUM_CPU,
                                   None, None, 0) for k in ev.keys)
        return out


def first_loaded_block(blocks: list[Any], local: int, n_gpu: int, bs: int, sync: bool) -> int:
    """The first of a group's blocks past the ``local`` hit that a load writes (``n_gpu``: none):
    the first fresh one (no hash yet), or under a sync load the first that is not null (vLLM's
    ``load_key_ranges``); one group or several (`hybrid.py`)."""
    for i in range(-(-local // bs), n_gpu):
        b = blocks[i]
        if not b.is_null and (sync or b.block_hash is None):
            return i
    return n_gpu
