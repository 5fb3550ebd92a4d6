"""The miss reasons of one request (`kvcli replay TRACE --explain ID`): what `MissStats`
attributes to every counted admission, kept apart for the request asked about, with the
requests whose allocations evicted the blocks it missed as `evicted`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable


class WatchedMisses:
    __slots__ = ("admissions", "bs", "rid")

    def __init__(self, rid: str, block_size: int) -> None:
        self.rid = rid
        self.bs = block_size
        self.admissions: list[dict] = []

    def admission(self, ev: dict, hit_tokens: int, counts: dict[str, int], tail: int,
                  evictors: list[int]) -> None:
        """One counted admission of the request: missed tokens by reason (the partial tail is
        `partial_block`, as `MissStats.record` counts it)."""
        missed = {r: n * self.bs for r, n in counts.items() if n}
        if tail:
            missed["partial_block"] = missed.get("partial_block", 0) + tail
        self.admissions.append({"step": ev["step"], "prompt_tokens": ev["prompt_tokens"],
                                "hit_tokens": hit_tokens, "missed": missed,
                                "evicted_by": Counter(evictors)})

    def in_flight(self, step: int, tokens: int) -> None:
        """Its first missed block (``tokens`` long), counted `cold` at its admission in `step`,
        was in flight."""
        for adm in self.admissions:
            if adm["step"] == step and adm["missed"].get("cold"):
                m = adm["missed"]
                m["cold"] -= tokens
                m["in_flight"] = m.get("in_flight", 0) + tokens
                if not m["cold"]:
                    del m["cold"]
                return

    def to_json(self, names: Callable[[int], str | None]) -> list[dict]:
        """Per counted admission: ``step``, ``prompt_tokens``, ``hit_tokens``,
        ``missed_tokens``, ``missed`` (reason -> tokens, most first) and ``evicted_by``
        (request -> blocks of its missed prompt that request's allocations evicted)."""
        out = []
        for adm in self.admissions:
            missed = dict(sorted(adm["missed"].items(), key=lambda kv: -kv[1]))
            out.append({"step": adm["step"], "prompt_tokens": adm["prompt_tokens"],
                        "hit_tokens": adm["hit_tokens"], "missed_tokens": sum(missed.values()),
                        "missed": missed,
                        "evicted_by": {names(r): n for r, n in adm["evicted_by"].most_common()}})
        return out
