"""`TraceBlockHasher`: a request's block hashes, reusing those of recently seen trace blocks.

Hashing every prompt block (sha256 over a pickle, as vLLM does) is the largest single cost of a
long replay. In a trace given as hash ids (Mooncake, Bailian) the engine blocks inside one trace
block are a pure function of the hash before the trace block and the trace block's id: trace
block `h` holds the tokens `h*TB ...` (`kvcore.traces.request`). So when the trace block size
is a multiple of the engine's, the engine hashes of `(parent hash, trace block id)` are
remembered (a bounded LRU table) and reused when the same prefix comes back, which multi-turn
traces do all the time. The hashes are the same bytes as `BlockHasher` gives (a test checks):
only the work is skipped. Requests with extra keys (LoRA, salt, mm), token-id traces and decode
blocks take `BlockHasher`'s path.
"""

from __future__ import annotations

from kvcore.hashing import BlockHasher
from kvcore.request import Request
from kvcore.traces import TraceRequest


class TraceBlockHasher(BlockHasher):
    """`BlockHasher` plus the trace-block table. The replay sets `pending` to the trace request
    a `Request` is about to be built from; the first call (the prompt) consumes it."""

    __slots__ = ("limit", "memo", "pending")

    LIMIT = 1 << 14   # trace blocks remembered (32 hashes each at 512 / 16: about 40 MB)

    def __init__(self, block_size: int, hash_name: str = "sha256",
                 limit: int | None = None) -> None:
        super().__init__(block_size, hash_name)
        self.limit = limit or self.LIMIT
        self.memo: dict[tuple[bytes, int, int], tuple[bytes, ...]] = {}
        self.pending: TraceRequest | None = None

    def __call__(self, request: Request) -> list[bytes]:
        tr, self.pending = self.pending, None
        bs = self.block_size
        if (tr is None or tr.hash_ids is None or request.block_hashes
                or request.lora_request is not None or request.mm_features
                or request.cache_salt or tr.trace_block_size % bs
                or request.num_tokens != tr.prompt_len):
            return BlockHasher.__call__(self, request)
        tb = tr.trace_block_size
        per = tb // bs
        fn = self.hash_fn
        memo = self.memo
        parent = self.none_hash
        out: list[bytes] = []
        left = tr.prompt_len
        for h in tr.hash_ids:
            n = min(tb, left)
            left -= n
            key = (parent, h, tb)
            got = memo.pop(key, None)
            if got is not None:
                memo[key] = got            # most recently used: to the back
                if n < tb:
                    out.extend(got[:n // bs])
                    break
                out.extend(got)
                parent = got[-1]
                continue
            base = h * tb
            k = per if n == tb else n // bs
            new = []
            for j in range(k):
                start = base + j * bs
                parent = fn((parent, tuple(range(start, start + bs)), None))
                new.append(parent)
            out.extend(new)
            if n < tb:
                break
            memo[key] = tuple(new)
            if len(memo) > self.limit:
                del memo[next(iter(memo))]   # least recently used
        return out
