"""The miss-attribution fields of our `admit` events (docs/events.md), read by `kvcli stats`.

They let a consumer of the stream say why a prompt block missed without re-hashing the trace:
the hashes of the prompt's full blocks (not capped by the last-token rule), the first token of
every prompt block (with the hash of the block before, it keys "a shared prefix that ends inside
this block"), and for a request with a LoRA adapter or a cache salt its hash domain and the same
blocks hashed with no extra keys ("cached in another hash domain" against "never seen").

Each list is per group, at the hash block, for the groups whose block it is (null for a coarser
group). Where no group's block is the hash block (groups of 32 and 48 tokens, hash block 16) the
same three lists also come once, at the hash block, as `chain_hashes`, `chain_first_tokens` and
`chain_content_hashes`: every group's keys are hashes of that chain (a block's is the hash at
its last hash boundary, a partial entry's the one at a boundary inside it), so `kvcli stats`
reads any group's misses from it (`analysis/stats/hash_units.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import orjson

from kvcore.engine.hash_json import hash_ints, hashes_json, stride_json
from kvcore.request import Request
from kvcore.traces import TraceRequest


def _hash_text(hashes: list[bytes]) -> orjson.Fragment:
    return orjson.Fragment(hashes_json(hashes))


class AdmitFields:
    """`fields(req) -> dict`, the extra `admit` fields of one admission."""

    def __init__(self, hash_block_size: int, group_block_sizes: Sequence[int],
                 hasher: Callable[[Request], list[bytes]] | None,
                 trace_request: Callable[[str], TraceRequest], *, arrays: bool = False,
                 pieces: Any = None) -> None:
        """`arrays`: the sink writes the lines itself (`JsonlEvents.writes_arrays`): the hash
        lists may then come as JSON text already (an `orjson.Fragment` of `hashes_json`: in
        C on the compiled build, no int per hash). `pieces`: the sink's line thread writes the
        lists' digits (`JsonlEvents.pieces`: its `native_pipe`): the fields then hold a mark
        for each, and `take_parts` gives the lists (`native_pipe`'s segments.pxi)."""
        self.hbs = hash_block_size
        self.arrays = arrays
        self.hash_ints = _hash_text if arrays else hash_ints
        self.pieces = pieces
        self.parts: list[tuple] | None = None
        # Per group at the group's block size; groups hashed at a coarser size get null.
        self.same = [bs == hash_block_size for bs in group_block_sizes]
        # ... and the chain once where no group is at the hash block (the module doc)
        self.chain = not any(self.same)
        self.hasher = hasher
        self.trace_request = trace_request

    def __call__(self, req: Request) -> dict:
        hbs = self.hbs
        same = self.same
        tr = self.trace_request(req.request_id)
        domain = None
        if tr.lora is not None or tr.cache_salt is not None:
            domain = ";".join(p for p in (f"lora={tr.lora}" if tr.lora is not None else "",
                                          f"salt={tr.cache_salt}" if tr.cache_salt is not None
                                          else "") if p)
        n_prompt = req.num_prompt_tokens
        hashes: orjson.Fragment | list[int]
        if self.pieces is not None:
            self.parts = []
            # (as the slice below: none with prefix caching off, which hashes nothing)
            hashes = self._mark(("h", req.block_hashes,
                                 min(n_prompt // hbs, len(req.block_hashes))))
        else:
            hashes = self.hash_ints(req.block_hashes[:n_prompt // hbs])
        first = self._first_tokens(req, tr, n_prompt)
        out: dict[str, Any] = {"prompt_hashes": [hashes if x else None for x in same],
               "hash_domain": domain,
               "first_tokens": [first if x else None for x in same]}
        if self.chain:
            out["chain_hashes"] = hashes
            out["chain_first_tokens"] = first
        if domain is not None and self.hasher is not None:
            plain = Request(req.request_id, tr.prompt_tokens()[:n_prompt - n_prompt % hbs],
                            self.hasher)
            content = (self.hash_ints(plain.block_hashes) if self.pieces is None
                       else self._mark(("h", plain.block_hashes, len(plain.block_hashes))))
            out["content_hashes"] = [content if x else None for x in same]
            if self.chain:
                out["chain_content_hashes"] = content
        return out

    def _first_tokens(self, req: Request, tr: TraceRequest, n_prompt: int) -> object:
        """The first token of every prompt block: for a hash-id prompt, written by the sink,
        as JSON text made in C from the trace's ids (no int per block: 3% of a conversation
        replay with events); else the list."""
        hbs = self.hbs
        if self.arrays and tr.hash_ids is not None and tr.prompt_token_ids is None \
                and tr.trace_block_size is not None:
            tb = tr.trace_block_size
            if self.pieces is not None:
                ids = list(tr.hash_ids)
                if self.pieces.stride_count(ids, tb, n_prompt, hbs) >= 0:
                    return self._mark(("s", ids, tb, n_prompt, hbs))
            text = stride_json(tr.hash_ids, tb, n_prompt, hbs)
            if text is not None:
                return orjson.Fragment(text)
        return req.token_ids(0, n_prompt, hbs)

    def _mark(self, part: tuple) -> orjson.Fragment:
        """The line's mark for ``part``, kept for `take_parts`."""
        assert self.parts is not None
        self.parts.append(part)
        return orjson.Fragment(self.pieces.segment_mark(len(self.parts) - 1))

    def take_parts(self) -> list[tuple] | None:
        """The lists the last fields' marks stand for (None: no marks)."""
        parts, self.parts = self.parts, None
        return parts
