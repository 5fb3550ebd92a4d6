"""`HybridConnector`: the CPU tier over several KV cache groups (vLLM 0.33 offloads every
prefix-cacheable group: full attention, sliding window, chunked local attention).

vLLM's `OffloadingConnectorScheduler` (`offloading/scheduler.py`) with one `RequestGroupState`
per group (docs/offload.md, "Hybrid models"):

* a chunk's key is its last block's hash plus the group index (`keys.make_key`): the same tokens
  give one CPU entry per group; each group has its keys, its copy of the request's block ids
  (zeroed where the window freed a block that went to another request this step) and its next
  chunk to store;
* the lookup (`hybrid_lookup.lookup`) visits full groups forward, windowed groups backward for a
  window-long run, and repeats passes until the end agrees;
* a load is one job over all groups, from each group's first block past the GPU hit that is
  neither null nor cached (`group_sizes`); stores are `hybrid_stores.build_meta`;
* each group's chunk is its own blocks (groups of several block sizes: `tpcs`);
* with a hash block finer than a Mamba block (`--prefix-match-unit`) a key is every
  ``hashes_per_chunk``-th hash, and with one block a chunk a hit may end on a partial tail
  inside a block (`hybrid_partial`: its lookup, store and load of the boundary's keys).

One group keeps `OffloadingConnector` (its outputs unchanged, byte for byte).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kvcore.kv_events import MEDIUM_CPU, BlockRemoved, BlockStored, hash_to_int
from kvcore.managers.mamba import MambaManager
from kvcore.offload.completions import unfence
from kvcore.offload.connector import OffloadingConnector, first_loaded_block
from kvcore.offload.hybrid_groups import alignment_tokens, group_infos
from kvcore.offload.hybrid_lookup import lookup
from kvcore.offload.hybrid_partial import (
    boundary_key,
    lookup_with_tails,
    partial_tail_block,
    proof_margins,
)
from kvcore.offload.jobs import Job
from kvcore.offload.keys import ReqContext, key_group, key_hash, make_key
from kvcore.offload.manager_reports import drain_events
from kvcore.request import Request
from kvcore.specs import cdiv

if TYPE_CHECKING:
    from kvcore.block import KVCacheBlock
    from kvcore.kv_cache_manager import KVCacheManager
    from kvcore.offload.config import OffloadConfig


@dataclass(slots=True)
class GroupState:
    keys: list[bytes] = field(default_factory=list)
    block_ids: list[int] = field(default_factory=list)
    next_stored: int = 0
    table: list[KVCacheBlock] | None = None     # the live table as last seen
    n_seen: int = 0
    # a full group's end (in chunks) of the hits its last complete-chunk lookup confirmed
    # (vLLM's lookup_hit_end_chunk_idx: a partial tail's bridge chunk is not looked up again)
    hit_end: int = 0


@dataclass(slots=True)
class HybridState:
    req: Request
    ctx: ReqContext
    groups: list[GroupState]
    num_local: int = 0
    jobs: set[int] = field(default_factory=set)
    finished_signaled: bool = False
    # the boundary of the partial tail the last lookup found (`hybrid_partial`), until its load
    partial_boundary: int | None = None
    loaded: bool = False    # vLLM's loaded_from_offload: some tokens came from the tier

    def update_keys(self, hpcs: tuple[int, ...], tpcs: tuple[int, ...]) -> None:
        """Each group's chunk keys: every ``hpc``-th hash (hashes per chunk: blocks per chunk
        unless the hash block is finer than the group's block)."""
        hashes = self.req.block_hashes
        ctx = self.ctx
        for g, gs in enumerate(self.groups):
            hpc, tpc = hpcs[g], tpcs[g]
            keys = gs.keys
            for h in hashes[hpc * len(keys) + hpc - 1::hpc]:
                key = make_key(h, g)
                keys.append(key)
                ctx.set_position(key, len(keys) * tpc)


class HybridConnector(OffloadingConnector):
    def __init__(self, cfg: OffloadConfig, kvm: KVCacheManager, *,
                 enable_prefix_caching: bool = True, enable_events: bool = False) -> None:
        super().__init__(cfg, kvm, enable_prefix_caching=enable_prefix_caching,
                         enable_events=enable_events)
        self.hybrid = True
        self.manager.one_group = False
        kv_groups = list(self.kvm.coordinator.kv_cache_config.kv_cache_groups)
        # each group's chunk is its own blocks (vLLM's GroupOffloadConfig: groups of several
        # block sizes key and store each by its own chunk, `offloading/scheduler.py:245-262`)
        bpc = self.cfg.blocks_per_chunk
        self.blocks = tuple(g.kv_cache_spec.block_size for g in kv_groups)
        self.tpcs = tuple(b * bpc for b in self.blocks)
        self.infos = group_infos(kv_groups, list(self.tpcs))
        full = [i for i, g in enumerate(self.infos) if g.window is None]
        windowed = sorted((i for i, g in enumerate(self.infos) if g.window is not None),
                          key=lambda i: -(self.infos[i].window or 0))     # (stable)
        self.windowed = tuple(windowed)
        self.lookup_order = tuple(full) + self.windowed
        # the groups holding an EAGLE/MTP draft's layers (`eagle`)
        self.eagle_groups = frozenset(cfg.eagle_groups)
        self.hstates: dict[str, HybridState] = {}
        self.allocated: set[int] = set()
        self.retention: int | None = self.kvm.coordinator.retention_interval
        # Mamba groups: their states come from the GPU side's hand-off (`hybrid_mamba`), and
        # a step's offers are then a list (one per `prepare_store`).
        self.mamba_groups = tuple(i for i, g in enumerate(self.infos) if g.mamba)
        # a hit ends on a Mamba state: the Mamba groups' chunk (vLLM's _mamba_align_size)
        self.mamba_align = self.tpcs[self.mamba_groups[0]] if self.mamba_groups else 0
        assert all(self.tpcs[g] == self.mamba_align for g in self.mamba_groups)
        self.alignment = alignment_tokens(self.infos, self.tpcs)
        managers = self.kvm.coordinator.single_type_managers
        for g in self.mamba_groups:
            m = managers[g]
            assert isinstance(m, MambaManager)
            m.state_offers = []
        # the hash block (`--prefix-match-unit`): a chunk's key is its last hash, and with a
        # Mamba block coarser than it, partial tails (`hybrid_partial`; 0: none)
        self.hash_block = self.kvm.block_pool.hash_block_size
        self.hashes_per_chunk = tuple(t // self.hash_block for t in self.tpcs)
        self.partial_block = partial_tail_block(
            [g.kv_cache_spec for g in self.kvm.coordinator.kv_cache_config.kv_cache_groups],
            self.cfg.blocks_per_chunk, self.hash_block)
        self.proof_margins = proof_margins(
            [bool(self.partial_block) and g in self.eagle_groups and not info.mamba
             for g, info in enumerate(self.infos)], self.hash_block, self.partial_block)
        self.max_proof_margin = max(self.proof_margins, default=0)

    # -- requests ----------------------------------------------------------------------------
    def on_new_request(self, req: Request) -> None:
        ctx = ReqContext(req.request_id)
        self.manager.on_new_request(ctx)
        self.hstates[req.request_id] = HybridState(
            req, ctx, [GroupState() for _ in self.infos])

    def update_keys(self, st: Any) -> None:
        st.update_keys(self.hashes_per_chunk, self.tpcs)

    # -- lookup --------------------------------------------------------------------------------
    def _all_states(self) -> dict[str, Any]:
        return self.hstates

    def _restart(self, st: Any) -> None:
        for gs in st.groups:
            gs.block_ids = []
            gs.table = None
            gs.n_seen = 0
            gs.next_stored = 0

    def _lookup(self, st: Any) -> int | None:
        if self.partial_block:
            return lookup_with_tails(self, st)
        return lookup(self, st)

    # -- after the allocation ------------------------------------------------------------------
    def update_state_after_alloc(self, req: Request, ext: int) -> int:
        tables = self.kvm.coordinator.get_blocks(req.request_id)
        allocated = self.allocated
        for blocks in tables:
            allocated.update([b.block_id for b in blocks])
        allocated.discard(0)
        if ext == 0:
            return 0
        cfg = self.cfg
        rid = req.request_id
        st = self.hstates[rid]
        st.loaded = True
        sync = rid in self.sync_loads
        local = st.num_local
        cached = local + ext
        bpc = cfg.blocks_per_chunk
        keys: list[bytes] = []
        dst: list[int] = []
        sizes: list[int] = []
        first_loaded = cached
        tail = st.partial_boundary
        st.partial_boundary = None
        assert tail is None or tail == cached
        for g, (info, gs, blocks) in enumerate(zip(self.infos, st.groups, tables)):
            bs = self.blocks[g]
            n_gpu = cdiv(cached, bs)
            n_chunks = cdiv(cached, self.tpcs[g])
            start = first_loaded_block(blocks, local, n_gpu, bs, sync)
            if n_gpu > start:
                if tail is None:
                    keys.extend(gs.keys[start // bpc:n_chunks])
                else:
                    # the complete chunks before the tail's block, then the tail's own key
                    keys.extend(gs.keys[start // bpc:n_chunks - 1])
                    keys.append(boundary_key(self, st, g, tail))
                # (a Mamba state stands for the whole range past the local hit)
                first_loaded = min(first_loaded, local if info.mamba else start * bs)
            dst.extend(b.block_id for b in blocks[start:n_gpu])
            sizes.append(n_gpu - start)
            gs.next_stored = n_chunks
        slots = self.manager.prepare_load(keys, st.ctx)
        job = Job(self._new_job_id(), rid, keys, dst, slots, is_store=False, sync=sync)
        job.group_sizes = sizes
        self._start_load(st.jobs, job)
        return cached - first_loaded if keys else 0

    def allocated_ids(self) -> set[int]:
        return self.allocated

    def end_step(self) -> None:
        self.allocated = set()

    # -- finish and completions ----------------------------------------------------------------
    def _unfence_job(self, jid: int, job: Job, finished: bool) -> None:
        """Windowed groups' blocks are watched from the job's start; the others' as one
        group's, once the request finished."""
        unfence(self.fenced, jid, job.window_fence)
        if finished:
            unfence(self.fenced, jid, job.fence_block_ids)

    # -- events ----------------------------------------------------------------------------------
    def take_events(self) -> list:
        """CPU `BlockStored` per key and `BlockRemoved` per eviction batch and group (in first
        seen order), each with the key's group."""
        out: list = []
        for ev in drain_events(self.manager):
            if ev.removed:
                if ev.metadata_only:
                    continue
                by_group: dict[int, list[int]] = {}
                for k in ev.keys:
                    by_group.setdefault(key_group(k), []).append(hash_to_int(key_hash(k)))
                out.extend(BlockRemoved(h, MEDIUM_CPU, g) for g, h in by_group.items())
                continue
            out.extend(BlockStored([hash_to_int(key_hash(k))], None, [], 0, None, MEDIUM_CPU,
                                   None, None, key_group(k)) for k in ev.keys)
        return out


def key_out(key: bytes) -> list[int]:
    """A hybrid key in the step lines and the summary: [group, hash] (the oracle's form)."""
    return [key_group(key), hash_to_int(key_hash(key))]


def key_hash_int(key: bytes) -> int:
    """A hybrid key in our event stream: its hash's int (its group goes in the event's
    ``groups``, docs/events.md)."""
    return hash_to_int(key_hash(key))
