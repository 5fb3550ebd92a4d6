"""The ends of the CPU tier's work, for the connector (`connector.OffloadingConnector`, and
`hybrid.HybridConnector` through its hooks): a request finishing and the worker's reports.

* `request_finished(conn, req)` (vLLM's `OffloadingConnectorScheduler.request_finished`): its
  GPU blocks are freed at once, so its in-flight stores now watch ("fence") their source blocks:
  a block handed out again flushes them (`stores.py`).
* `update_connector_output(conn, done)`: the jobs the worker reported, in report order: a store
  makes its chunks readable, a load unpins them; each releases its fences
  (`OffloadingConnector._unfence_job`, one group's or several's) and the request's state goes
  once it finished with no job left.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvcore.offload.connector import OffloadingConnector
    from kvcore.request import Request


def request_finished(conn: OffloadingConnector, req: Request) -> None:
    """Its GPU blocks are freed now; its final offer and commit come next step. Its
    in-flight stores now watch their source blocks (a reuse flushes them)."""
    st = conn._all_states().get(req.request_id)
    if st is None:
        return
    conn.update_keys(st)
    for jid in st.jobs:
        for bid in conn.jobs[jid].fence_block_ids:
            conn.fenced.setdefault(bid, set()).add(jid)


def update_connector_output(conn: OffloadingConnector, done: list[int]) -> None:
    """The worker reported these jobs (in report order)."""
    manager = conn.manager
    rec = conn.rec
    states = conn._all_states()
    for jid in done:
        job = conn.jobs.pop(jid)
        st = states[job.req_id]
        if job.is_store:
            stored, _ = manager.complete_store(job.keys, chunks=job.statuses)
            rec.chunks_stored += len(stored)
        else:
            manager.complete_load(job.keys)
            rec.chunks_loaded += len(job.keys)
            if conn.being_loaded:
                conn.being_loaded.difference_update(job.keys)
        if conn.fenced:
            conn._unfence_job(jid, job, st.req.is_finished())
        st.jobs.remove(jid)
        if st.finished_signaled and not st.jobs:
            del states[job.req_id]


def unfence(fenced: dict[int, set[int]], jid: int, bids: list[int]) -> None:
    """Job ``jid`` no longer holds back blocks ``bids`` (a block no job watches leaves
    ``fenced``, the connector's block id -> the pending store jobs reading it)."""
    for bid in bids:
        waiting = fenced[bid]
        waiting.remove(jid)
        if not waiting:
            del fenced[bid]
