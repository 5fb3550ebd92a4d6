"""The CPU tier connector's records: a request's offload state (one group), a transfer job,
and one step's work for the worker (`connector.OffloadingConnector` makes them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kvcore.offload.keys import ReqContext
from kvcore.request import Request

if TYPE_CHECKING:
    from kvcore.block import KVCacheBlock
    from kvcore.offload.keys import ChunkStatus


@dataclass(slots=True)
class RequestOffloadState:
    """What the connector keeps of one request (vLLM's `RequestOffloadState`, one group)."""

    req: Request
    ctx: ReqContext
    keys: list[bytes] = field(default_factory=list)   # one per keyed chunk, in chunk order
    # its GPU blocks as of its last schedule
    blocks: list[KVCacheBlock] = field(default_factory=list)
    n_seen: int = 0               # how many of them the connector has seen handed out
    next_stored: int = 0          # the store cursor (chunk index)
    num_local: int = 0            # the GPU hit of its last lookup
    jobs: set[int] = field(default_factory=set)       # in flight: one load, or stores
    finished_signaled: bool = False

    def update_keys(self, bpc: int) -> None:
        """The keys of its chunks completed since: each chunk's last block hash (chunk i ends
        at token (i + 1) x tokens per chunk: the context's ``chunk_keys`` is this list)."""
        keys = self.keys
        keys.extend(self.req.block_hashes[bpc * len(keys) + bpc - 1::bpc])


@dataclass(slots=True)
class Job:
    """A transfer: a load (CPU -> GPU) or a store (GPU -> CPU) of a request's chunks."""

    job_id: int
    req_id: str
    keys: list[bytes]             # in chunk order
    gpu_block_ids: list[int]      # GPU blocks written (load) or read (store)
    chunks: list[int]             # CPU slots read (load) or written (store)
    is_store: bool
    sync: bool = False            # a load inside the step (`sync_load_budget_bytes`)
    fence_block_ids: list[int] = field(default_factory=list)   # store: blocks it reads
    statuses: list[ChunkStatus] = field(default_factory=list)  # store: its slots' statuses
    group_sizes: list[int] | None = None    # several groups (`hybrid.py`): blocks per group
    window_fence: list[int] = field(default_factory=list)   # windowed blocks, watched at once


@dataclass(slots=True)
class ConnectorMeta:
    """One step's work for the worker (vLLM's `OffloadingConnectorMetadata`)."""

    load_jobs: dict[int, Job]
    store_jobs: dict[int, Job]
    jobs_to_flush: set[int]
