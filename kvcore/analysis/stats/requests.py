"""Per-request scalars of a replay: each request's index, its prompt and output lengths, the
blocks it holds in the reference group, and the moment it ends.

A request ends when it has finished and released its reference-group blocks (in either order:
engine mode sends `finish` then the `free`, or the `free` of a preemption then `finish`), or, in
cache mode, at its `free`; then `MemoryStats.request_end` gets the blocks it held and its KV
tokens. Indices are small ints the block history stores in place of request ids.
"""

from __future__ import annotations

from kvcore.analysis.stats.entry_checks import count
from kvcore.analysis.stats.memory import MemoryStats


class RequestLedger:
    def __init__(self, mem: MemoryStats, cache_mode: bool) -> None:
        self.mem = mem
        self.cache_mode = cache_mode
        self.index: dict[str, int] = {}       # request id -> index
        self.names: list[str] = []            # index -> request id
        self.prompt: dict[str, int] = {}
        self.output: dict[str, int] = {}
        self.held: dict[str, int] = {}        # blocks held in the reference group
        self.last_release: dict[str, int] = {}  # blocks of its last full release
        self.pending_finish: set[str] = set()
        self.requests = 0
        self.rejected = 0
        self.finished = 0

    def rid(self, req: str) -> int:
        """The request's index (a new one the first time it is seen)."""
        r = self.index.get(req)
        if r is None:
            r = self.index[req] = len(self.names)
            self.names.append(req)
        return r

    def name(self, rid: int) -> str | None:
        return self.names[rid] if rid < len(self.names) else None

    # -- event handlers ----------------------------------------------------------------------------
    def arrive(self, ev: dict) -> None:
        req = ev["req"]
        self.rid(req)
        self.requests += 1
        self.prompt[req] = count(ev["prompt_tokens"], "prompt_tokens")
        self.output[req] = count(ev["output_tokens"], "output_tokens")

    def finish(self, ev: dict) -> None:
        req = ev["req"]
        self.finished += 1
        self.output[req] = count(ev["output_tokens"], "output_tokens")
        if self.held.get(req, 0) > 0:
            self.pending_finish.add(req)          # its blocks are released after `finish`
        else:
            self._end(req, self.last_release.pop(req, 0))

    def reject(self, ev: dict) -> None:
        self.rejected += 1
        self.prompt.pop(ev["req"], None)
        self.output.pop(ev["req"], None)

    # -- reference-group blocks --------------------------------------------------------------------
    def hold(self, req: str, n: int) -> None:
        self.held[req] = self.held.get(req, 0) + n

    def release(self, req: str, n: int) -> None:
        held = self.held.get(req, 0)
        left = held - n
        if left > 0:
            self.held[req] = left
            return
        self.held.pop(req, None)
        if req in self.pending_finish:
            self.pending_finish.discard(req)
            self._end(req, held)
        elif self.cache_mode:                     # cache mode: look up, allocate, free; no finish
            self._end(req, held)
        else:                                     # preempted, or `finish` comes next
            self.last_release[req] = held

    def _end(self, req: str, blocks: int) -> None:
        prompt = self.prompt.pop(req, 0)
        out = self.output.pop(req, 0)
        kv = prompt if self.cache_mode else prompt + out - 1
        self.mem.request_end(blocks, kv)
