"""Hand-built event streams for the stats tests (each event as `kvcli replay --events` writes it)."""

from __future__ import annotations

import orjson


class Stream:
    def __init__(self, *, block_size=4, num_blocks=10, groups=None, mode="engine") -> None:
        self.header = {"kind": "header", "schema_version": 1, "mode": mode,
                       "block_size": block_size, "num_blocks": num_blocks,
                       "groups": groups or [{"type": "full_attention", "block_size": block_size}],
                       "warmup": 0.0, "trace": "hand-built", "config": {}}
        self.events: list[dict] = []
        self.step = 0
        self.t = 0.0

    def at(self, step: int, t_ms: float | None = None) -> Stream:
        self.step = step
        self.t = float(step * 10) if t_ms is None else t_ms
        return self

    def add(self, kind: str, req=None, group=None, **fields) -> Stream:
        self.events.append({"seq": len(self.events), "step": self.step, "t_ms": self.t,
                            "kind": kind, "req": req, "group": group, **fields})
        return self

    # request events
    def arrive(self, req, prompt, out=1):
        return self.add("arrive", req, prompt_tokens=prompt, output_tokens=out)

    def admit(self, req, prompt, hit, hashes=None, counted=True, resumed=False, **extra):
        f = dict(prompt_tokens=prompt, hit_tokens=hit, resumed=resumed, counted=counted, **extra)
        if hashes is not None:
            f["prompt_hashes"] = hashes
        return self.add("admit", req, **f)

    def finish(self, req, out=1):
        return self.add("finish", req, output_tokens=out)

    # block events
    def allocate(self, req, blocks, group=0):
        return self.add("allocate", req, group, blocks=blocks)

    def touch(self, req, blocks, hashes, group=0):
        return self.add("touch", req, group, blocks=blocks, hashes=hashes)

    def cache(self, req, blocks, hashes, group=0):
        return self.add("cache", req, group, blocks=blocks, hashes=hashes)

    def evict(self, req, block, h, group=0):
        return self.add("evict", req, group, blocks=[block], hashes=[h])

    def free(self, req, blocks, freed=None, evictable=(), group=0):
        return self.add("free", req, group, blocks=blocks,
                        freed=list(blocks if freed is None else freed), evictable=list(evictable))

    def end(self, summary=None):
        return self.add("end", summary=summary or {})

    def lines(self) -> list[bytes]:
        return [orjson.dumps(e) + b"\n" for e in [self.header, *self.events]]

    def write(self, path) -> str:
        path.write_bytes(b"".join(self.lines()))
        return str(path)
