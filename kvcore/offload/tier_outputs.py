"""What the CPU tier adds to a replay's outputs: a step line's offload keys (`step_fields`) and
the summary's `offload` object (`offload_summary`), with the oracle's keys (docs/offload.md,
"What the outputs gain"). `OffloadTier.end_step` adds the step line's; the replay the summary's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvcore.offload.jobs import ConnectorMeta, Job
from kvcore.request import RequestStatus

if TYPE_CHECKING:
    from kvcore.offload.tier import OffloadTier


def _jobs(jobs: dict[int, Job], load: bool, key: Any) -> dict[str, dict]:
    """``key``: a key's output form (`OffloadTier.key`)."""
    out = {}
    for jid, job in jobs.items():
        d: dict[str, Any] = {"req": job.req_id, "gpu_blocks": len(job.gpu_block_ids),
                             "chunks": job.chunks}
        if load:
            d["sync"] = job.sync
        if job.group_sizes is not None:
            d["group_sizes"] = job.group_sizes
        d["keys"] = [key(k) for k in job.keys]
        out[str(jid)] = d
    return out


def offer_calls(offer: Any) -> list[Any]:
    """A step line's `store_offers` entry as its `prepare_store` calls: with Mamba groups a list
    of them, else the one entry ([first, n, absent] for one group, a dict for several)."""
    return offer if offer and isinstance(offer, list) and isinstance(offer[0], dict) else [offer]


def offered_chunks(offer: Any) -> int:
    """The chunks an offer (a step line's `store_offers` entry) offered."""
    return sum(sum(len(c) for c in o["chunks"].values()) if isinstance(o, dict) else o[1]
               for o in offer_calls(offer))


def _wait_summary(waits: list[int]) -> dict:
    """count, nearest-rank p50 / p99 and max (None without a load)."""
    w = sorted(waits)
    n = len(w)

    def rank(p: int) -> int | None:
        return w[max(1, -(-p * n // 100)) - 1] if n else None

    return {"count": n, "p50": rank(50), "p99": rank(99), "max": w[-1] if n else None}


def step_fields(tier: OffloadTier, sched: Any, meta: ConnectorMeta | None,
                done: list[int] | None, recv: set[str] | None) -> dict:
    """A step line's offload keys: this step's `schedule()` (``meta``) and the reports of the
    batch processed in it (``done``, ``recv``)."""
    rec = tier.conn.rec
    used, pending, pinned = tier.cpu_state()
    # (a request waiting for its load holds blocks: it is in the holding queue)
    waiting_kv = [r.request_id for r in sched.kv_holding
                  if r.status == RequestStatus.WAITING_FOR_REMOTE_KVS]
    out = {
        "lookups": dict(rec.lookups), "lookup_deferred": list(rec.deferred),
        "waiting_for_kv": waiting_kv,
        "load_jobs": _jobs(meta.load_jobs, True, tier.key) if meta else {},
        "store_offers": dict(rec.offers),
        "store_jobs": _jobs(meta.store_jobs, False, tier.key) if meta else {},
        "flushed": sorted(meta.jobs_to_flush) if meta else [],
        "load_done": [j for j in done or () if not tier.reported[j]],
        "store_done": [j for j in done or () if tier.reported[j]],
        "recv_done": sorted(recv or ()),
        "chunks_loaded": rec.chunks_loaded, "chunks_stored": rec.chunks_stored,
        "cpu_evicted": [tier.key(k) for k in rec.evicted],
        "cpu_alloc_failures": list(rec.alloc_failures),
        "cpu_used": used, "cpu_pending": pending, "cpu_pinned": pinned,
    }
    return out


def offload_summary(tier: OffloadTier, gpu_hits: int, cpu_hits: int) -> dict:
    """The summary's `offload` object (the oracle's keys)."""
    used, pending, pinned = tier.cpu_state()
    t = tier.totals
    w = tier.worker
    cfg = tier.cfg
    return {
        "gpu_hit_tokens": gpu_hits, "cpu_hit_tokens": cpu_hits,
        "load_jobs": t["load_jobs"], "store_jobs": t["store_jobs"],
        "flushed_jobs": t["flushed_jobs"],
        "chunks_loaded": t["chunks_loaded"], "chunks_stored": t["chunks_stored"],
        "gpu_blocks_loaded": w.blocks["load"], "gpu_blocks_stored": w.blocks["store"],
        "bytes_loaded": w.bytes["load"], "bytes_stored": w.bytes["store"],
        "store_offers": t["store_offers"], "alloc_failures": t["alloc_failures"],
        "cpu_evictions": t["cpu_evictions"], "lookup_deferrals": t["lookup_deferrals"],
        "max_cpu_used": tier.max_cpu_used, "cpu_used_end": used,
        "cpu_pending_end": pending, "cpu_pinned_end": pinned,
        "jobs_in_flight_end": len(tier.conn.jobs),
        "cpu_num_chunks": cfg.num_chunks, "tokens_per_chunk": cfg.tokens_per_chunk,
        "kv_bytes_per_block": cfg.kv_bytes_per_block,
        "copy_bytes_per_block": list(w.group_bytes),
        "kv_bytes_per_chunk": cfg.kv_bytes_per_chunk, "kv_offloading_size_gib": cfg.gib,
        "load_wait_steps": _wait_summary(tier.load_waits),
        "connector_prefix_cache_stats": tier.stats.to_json(),
        "policy_state_end": tier.conn.manager.policy.end_state(tier.key),
    }
