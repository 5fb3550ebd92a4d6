"""The story of one request in a replay (`kvcli replay TRACE --explain ID`).

`RequestStory` is fed every line of our event stream (`CallbackEvents`) and every step line; it
keeps what concerns one request: its arrival, the steps it was scheduled in and with how many
tokens (as runs of equal steps), each admission with its hit and who had cached the blocks it
hit, the blocks it allocated and cached, a preemption and what it lost, its finish, and what
happened to its cached blocks afterwards (which later requests hit them, which evicted them);
with a CPU tier, its CPU hit and its load and store jobs.
Memory: the block-to-cacher map (one entry per cached block) and the request's own lines.
"""

from __future__ import annotations

from collections import Counter
from typing import Any


class RequestStory:
    def __init__(self, rid: str) -> None:
        self.rid = rid
        self.cacher: dict[tuple[int, int], str] = {}    # (group, block) -> who cached its hash
        self.mine: set[tuple[int, int]] = set()          # blocks still holding a hash it cached
        self.lines: list[dict] = []
        self.runs: list[dict] = []                       # scheduled: {from, to, tokens}
        self.hit_by: Counter[str] = Counter()            # later requests: blocks of its they hit
        self.evicted_by: Counter[str] = Counter()        # requests whose allocations evicted them
        self.seen = False
        self.jobs: dict[int, str] = {}                   # its CPU tier jobs: id -> load | store

    # -- the event stream --------------------------------------------------------------------
    def event(self, ev: dict[str, Any]) -> None:
        kind = ev["kind"]
        req: Any = ev.get("req")        # (a JSON record: str, or None where a kind has none)
        g: Any = ev.get("group")
        if kind == "cache":
            for b in ev["blocks"]:
                key = (g, b)
                self.cacher[key] = req
                if req == self.rid:
                    self.mine.add(key)
                else:
                    self.mine.discard(key)
        elif kind == "evict":
            lost = 0
            for b in ev["blocks"]:
                key = (g, b)
                self.cacher.pop(key, None)
                if key in self.mine:
                    self.mine.discard(key)
                    lost += 1
            if lost:
                self.evicted_by[req] += lost
                self._line(ev, "its cached blocks evicted", by=req, group=g, blocks=lost)
        elif kind == "touch" and req != self.rid:
            n = sum(1 for b in ev["blocks"] if (g, b) in self.mine)
            if n:
                self.hit_by[req] += n
                self._line(ev, "its cached blocks hit", by=req, group=g, blocks=n)
        if kind == "offload_done" and ev.get("job") in self.jobs:
            self._line(ev, f"CPU tier {self.jobs.pop(ev['job'])} done", job=ev["job"])
        if req != self.rid or kind in ("evict",):
            return
        self.seen = True
        if kind == "arrive":
            self._line(ev, "arrived", prompt_tokens=ev["prompt_tokens"],
                       output_tokens=ev["output_tokens"])
        elif kind == "admit":
            cpu = {"cpu_hit_tokens": ev["cpu_hit_tokens"]} if "cpu_hit_tokens" in ev else {}
            self._line(ev, "re-admitted" if ev.get("resumed") else "admitted",
                       prompt_tokens=ev["prompt_tokens"], hit_tokens=ev["hit_tokens"], **cpu)
        elif kind in ("offload_load", "offload_store"):
            what = "load" if kind == "offload_load" else "store"
            self.jobs[ev["job"]] = what
            sync = {"sync": ev["sync"]} if "sync" in ev else {}
            self._line(ev, f"CPU tier {what} started", job=ev["job"], chunks=len(ev["keys"]),
                       gpu_blocks=ev["gpu_blocks"], **sync)
        elif kind == "offload_offer_failed":
            self._line(ev, "CPU tier offer failed", offered=ev["offered"])
        elif kind == "touch":
            owners = Counter(self.cacher.get((g, b)) for b in ev["blocks"])
            self._line(ev, "hit cached blocks", group=g, blocks=ev["blocks"],
                       cached_by=dict(owners))
        elif kind in ("allocate", "cache"):
            self._line(ev, "allocated" if kind == "allocate" else "cached", group=g,
                       blocks=ev["blocks"])
        elif kind == "free":
            self._line(ev, "freed", group=g, blocks=ev["blocks"], evictable=ev["evictable"])
        elif kind == "preempt":
            self._line(ev, "preempted", lost_tokens=ev["num_computed_tokens"])
        elif kind == "finish":
            self._line(ev, "finished", output_tokens=ev["output_tokens"])
        elif kind == "reject":
            self._line(ev, "rejected", reason=ev["reason"])

    def _line(self, ev: dict, what: str, **detail: Any) -> None:
        self.lines.append({"step": ev["step"], "t_ms": ev["t_ms"], "what": what, **detail})

    # -- the step lines ----------------------------------------------------------------------
    def step_line(self, line: dict) -> None:
        if "scheduled" not in line:
            return      # (an interrupted run's last line, {"interrupted": true}: a KeyError)
        n = line["scheduled"].get(self.rid)
        if n is None:
            return
        step = line["step"]
        last = self.runs[-1] if self.runs else None
        if last is not None and last["tokens"] == n and last["to"] == step - 1:
            last["to"] = step
        else:
            self.runs.append({"from": step, "to": step, "tokens": n})

    def to_dict(self) -> dict:
        return {"request": self.rid, "events": self.lines, "scheduled": self.runs,
                "hit_by": dict(self.hit_by.most_common()),
                "evicted_by": dict(self.evicted_by.most_common())}


class StepLines:
    """A binary 'file' for the replay's step lines that hands each parsed line to ``fn``."""

    def __init__(self, fn: Any) -> None:
        import orjson

        self.fn, self.loads = fn, orjson.loads

    def write(self, data: bytes) -> int:
        for line in data.splitlines():
            if line:
                self.fn(self.loads(line))
        return len(data)
