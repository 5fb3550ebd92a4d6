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

from kvcore.hashing import _PROTOCOL, BlockHasher, _dumps, _sha256
from kvcore.request import Request
from kvcore.traces import TraceRequest


class TraceBlockHasher(BlockHasher):
    """`BlockHasher` plus the trace-block table. The replay sets `pending` to the trace request
    a `Request` is about to be built from; the first call (the prompt) consumes it."""

    __slots__ = ("limit", "memo", "pending")

    # Trace blocks remembered, LRU. Each keeps its engine hashes as one bytes object (32 x 32
    # bytes at 512 / 16 with sha256): about 70 MB when full. On the Mooncake conversation trace
    # it serves 37% of the full trace blocks (an unbounded table: 38%).
    LIMIT = 1 << 16

    def __init__(self, block_size: int, hash_name: str = "sha256",
                 limit: int | None = None) -> None:
        super().__init__(block_size, hash_name)
        self.limit = limit or self.LIMIT
        self.memo: dict[tuple[bytes, int, int], bytes] = {}
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
        sha = self.hash_name == "sha256"
        memo = self.memo
        toks = request.all_token_ids
        parent = self.none_hash
        size = len(parent)
        out: list[bytes] = []
        pos = 0
        left = tr.prompt_len
        for h in tr.hash_ids:
            n = min(tb, left)
            left -= n
            k = per if n == tb else n // bs
            key = (parent, h, tb)
            got = memo.pop(key, None)
            if got is not None:
                memo[key] = got            # most recently used: to the back
                out.extend([got[i:i + size] for i in range(0, k * size, size)])
                if n < tb:
                    break
                parent = out[-1]
                pos += tb
                continue
            new = []
            for start in range(pos, pos + k * bs, bs):
                if sha:      # BlockHasher's sha256 fast path, the same bytes
                    parent = _sha256(_dumps((parent, tuple(toks[start:start + bs]), None),
                                            protocol=_PROTOCOL)).digest()
                else:
                    parent = fn((parent, tuple(toks[start:start + bs]), None))
                new.append(parent)
            out.extend(new)
            if n < tb:
                break
            pos += tb
            memo[key] = b"".join(new)
            if len(memo) > self.limit:
                del memo[next(iter(memo))]   # least recently used
        return out
