"""`TraceBlockHasher`: a request's block hashes, reusing those of recently seen trace blocks.

Hashing every prompt block (sha256 over a pickle, as vLLM does) is the largest single cost of a
long replay. In a trace given as hash ids (Mooncake, Bailian) the engine blocks inside one trace
block are a pure function of the hash before the trace block and the trace block's id: trace
block `h` holds the tokens `h*TB ...` (`kvcore.traces.request`). So when the trace block size
is a multiple of the engine's, the engine hashes of `(parent hash, trace block id)` are
remembered (a bounded LRU table) and reused when the same prefix comes back, which multi-turn
traces do all the time. A trace block not in the table is hashed with its pickle bytes built
directly when the tokens allow it (in C, `native_hash.pyx`, on the compiled build; else numpy
packs the tokens), instead of `pickle.dumps` per block. The hashes are the same bytes as
`BlockHasher` gives (tests check): only work is saved. A token-id prompt reuses the hashes of an earlier request sharing its prefix
(`prompt_prefixes.py`); requests with extra keys (LoRA, salt, mm) and decode blocks take
`BlockHasher`'s path.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from hashlib import sha256 as _sha256
from pickle import HIGHEST_PROTOCOL as _PROTOCOL
from pickle import dumps as _pickle_dumps
from typing import Any

from kvcore.engine.prompt_prefixes import PromptPrefixes
from kvcore.hashing import BlockHasher, native_hash
from kvcore.request import Request
from kvcore.traces import TraceRequest

# pickle.dumps((parent, tokens, None), protocol 5) for a 32-byte parent and tokens that all
# pickle as BININT (65536 <= t < 2**31; smaller ones are BININT1 / BININT2): PROTO 5, FRAME n,
# SHORT_BINBYTES parent, MEMOIZE, MARK, ("J" + int32 LE) per token, TUPLE, MEMOIZE, NONE,
# TUPLE3, MEMOIZE, STOP. Building these bytes directly gives the same sha256 as `BlockHasher`
# (tests compare them) for much less work.
# numpy and the packed (op, int32) record, 5 bytes a token: imported on first use (a token-id
# trace never needs them; numpy's import is ~0.09 s of a process's start)
_np: Any = None
_BININT: Any = None
_MID = b"\x94("
_END = b"t\x94N\x87\x94."


_FRAME_TARGET = 64 * 1024   # pickle's frame size target (protocol 4+)


def _frame_size(bs: int) -> int:
    return 2 + 32 + len(_MID) + 5 * bs + len(_END)


def _pickle_head(bs: int) -> bytes:
    return b"\x80\x05\x95" + struct.pack("<Q", _frame_size(bs)) + b"C\x20"


def _binint_sections(base: int, n: int, bs: int) -> list[bytes]:
    """The token part of the pickle of each of the `n // bs` blocks of tokens base, base+1, ..."""
    global _np, _BININT
    if _np is None:
        import numpy

        _np = numpy
        _BININT = numpy.dtype([("op", "u1"), ("v", "<i4")])
    np = _np
    a = np.empty(n, dtype=_BININT)
    a["op"] = 0x4A
    a["v"] = np.arange(base, base + n, dtype=np.int64)
    raw = a.tobytes()
    w = 5 * bs
    return [raw[i:i + w] for i in range(0, (n // bs) * w, w)]


class TraceBlockHasher(BlockHasher):
    """`BlockHasher` plus the trace-block table. `traces` maps request ids to the trace requests
    they are built from (the replay's own map); a hash-id prompt whose request id is there,
    with that trace request's prompt and no extra keys, is hashed through the table, a token-id
    one through `prefixes`."""

    __slots__ = ("ahead", "head", "limit", "memo", "prefixes", "traces")

    # Trace blocks remembered, LRU. Each keeps its engine hashes as one bytes object (32 x 32
    # bytes at 512 / 16 with sha256): about 70 MB when full. On the Mooncake conversation trace
    # it serves 37% of the full trace blocks (an unbounded table: 38%).
    LIMIT = 65_536

    def __init__(self, block_size: int, hash_name: str = "sha256", seed: str | None = None,
                 limit: int | None = None,
                 traces: Mapping[str, TraceRequest] | None = None) -> None:
        super().__init__(block_size, hash_name, seed)
        self.limit = limit or self.LIMIT
        # An OrderedDict, not a dict: evicting a dict's first key (`next(iter(d))`) walks past
        # every entry deleted since the dict last resized, and the LRU deletes all the time
        # (5.5% of the whole conversation replay went to that walk; OrderedDict's
        # `popitem(last=False)` and `move_to_end` are O(1)).
        self.memo: OrderedDict[tuple[bytes, int, int], bytes] = OrderedDict()
        self.traces: Mapping[str, TraceRequest] = traces if traces is not None else {}
        self.prefixes = PromptPrefixes(block_size)    # token-id prompts (prompt_prefixes.py)
        # hash-id prompts hashed ahead on a second thread (`hash_ahead.py`), when it runs
        self.ahead: Any = None
        # direct pickle bytes only for sha256 with 32-byte hashes (the default)
        # (pickle writes 1- to 3-tuples with other opcodes, and splits a pickle longer than its
        # 64 KiB frame target into several frames: blocks of more than ~13k tokens)
        self.head = (_pickle_head(block_size)
                     if hash_name == "sha256" and len(self.none_hash) == 32
                     and 4 <= block_size and _frame_size(block_size) < _FRAME_TARGET
                     else None)

    def __call__(self, request: Request) -> list[bytes]:
        bs = self.block_size
        if request.block_hashes:            # blocks completed by decode tokens
            return BlockHasher.__call__(self, request)
        plain = (request.lora_request is None and not request.mm_features
                 and not request.cache_salt)
        tr = self.traces.get(request.request_id)
        if tr is None or tr.hash_ids is None:     # token ids: an earlier request's prefix
            if plain:
                ids = None if tr is None else tr.prompt_array
                return self.prefixes.hash_prompt(request, ids, self.hash_after)
            return BlockHasher.__call__(self, request)
        tb = tr.trace_block_size
        if not plain or tb is None or tb % bs or request.num_tokens != tr.prompt_len:
            return BlockHasher.__call__(self, request)
        ahead = self.ahead
        if ahead is not None:
            got: list[bytes] | None = ahead.take(tr.index)
            if got is not None:
                return got
        return self._hash_ids(request, tr.hash_ids, tb, tr.prompt_len)

    def _hash_ids(self, request: Request, hash_ids: Sequence[int], tb: int, left: int
                  ) -> list[bytes]:
        """A hash-id prompt's hashes through the trace-block table (``tb``: the trace's block
        size, a multiple of ours; ``left``: the prompt's tokens)."""
        bs = self.block_size
        per = tb // bs
        fn = self.hash_fn
        sha = self.hash_name == "sha256"
        memo = self.memo
        parent = self.none_hash
        size = len(parent)
        native = native_hash() if size == 32 else None
        out: list[bytes] = []
        pos = 0
        for h in hash_ids:
            n = min(tb, left)
            left -= n
            k = per if n == tb else n // bs
            key = (parent, h, tb)
            got = memo.get(key)
            if got is not None:
                memo.move_to_end(key)      # most recently used: to the back
                if native is not None:
                    out.extend(native.split_hashes(got, k))
                else:
                    out.extend([got[i:i + size] for i in range(0, k * size, size)])
                if n < tb:
                    break
                parent = out[-1]
                pos += tb
                continue
            new = []
            joined = b""       # `new` as one bytes object, when the native hasher gave it so
            base = h * tb
            head = self.head
            if head is not None and 65536 <= base and base + k * bs <= 1 << 31:
                if native is not None:
                    # the same bytes hashed in C (native_hash.pyx): 154 ns a block where
                    # numpy's sections and hashlib took 696 ns
                    joined = native.trace_block_hashes(head, parent, base, k, bs)
                    new = native.split_hashes(joined, k)
                    if new:
                        parent = new[-1]
                else:
                    for sec in _binint_sections(base, k * bs, bs):
                        parent = _sha256(b"".join((head, parent, _MID, sec, _END))).digest()
                        new.append(parent)
            else:
                toks = request.token_ids(pos, pos + k * bs)
                for i in range(0, k * bs, bs):
                    if sha:      # BlockHasher's sha256 fast path, the same bytes
                        parent = _sha256(_pickle_dumps((parent, tuple(toks[i:i + bs]), None),
                                                       protocol=_PROTOCOL)).digest()
                    else:
                        parent = fn((parent, tuple(toks[i:i + bs]), None))
                    new.append(parent)
            out.extend(new)
            if n < tb:
                break
            pos += tb
            memo[key] = joined or b"".join(new)
            if len(memo) > self.limit:
                memo.popitem(last=False)     # least recently used
        return out
