"""vLLM 0.33's block hashes with one lookahead token (`num_hash_lookahead_tokens` 1: EAGLE
with prefix caching, `get_request_block_hasher`): the hash of block ``[s, s + bs)`` also covers
token ``s + bs``, so it exists once that token does, and a prefix hit needs it to match too.
Its extra keys are ``(E, token[s + bs])``, ``E`` those of ``[s, s + bs + 1)`` (`None` for a
plain request: `hashing.generate_lookahead_block_hash_extra_keys`). No fast path: EAGLE's
replays take this one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.hashing import generate_lookahead_block_hash_extra_keys, mm_index_for_window

if TYPE_CHECKING:
    from kvcore.hashing import BlockHasher
    from kvcore.request import Request


def lookahead_hashes(hasher: BlockHasher, request: Request, hashes: list[bytes]) -> list[bytes]:
    """`BlockHasher.hash_after` with one lookahead token: the hashes of ``request``'s blocks
    after the first ``len(hashes)`` whose next token exists."""
    bs = hasher.block_size
    start = len(hashes) * bs
    limit = request.num_tokens - 1
    if start + bs > limit:
        return []
    feats = request.mm_features
    mm_idx = 0
    if start > 0 and feats:
        last = feats[-1]
        if last.offset + last.length > start:
            mm_idx = mm_index_for_window(request, start)
    first = start
    toks = request.token_ids(first, limit - (limit - start) % bs + 1)
    parent = hashes[-1] if hashes else hasher.none_hash
    fn = hasher.hash_fn
    out: list[bytes] = []
    while start + bs <= limit:
        end = start + bs
        extra, mm_idx = generate_lookahead_block_hash_extra_keys(request, start, end, mm_idx)
        parent = fn((parent, tuple(toks[start - first:end - first]), (extra, toks[end - first])))
        out.append(parent)
        start = end
    return out
