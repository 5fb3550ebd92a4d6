"""Block hashing, byte for byte as vLLM 0.33 (`vllm/utils/hashing.py`, `kv_cache_utils.py`).

A block's hash chains over the whole prefix: ``hash_fn((parent_hash, tuple(tokens), extra_keys))``
where the first block's parent is ``NONE_HASH``. Four functions, as in vLLM:

* ``sha256``      sha256 over ``pickle.dumps(obj, HIGHEST_PROTOCOL)`` (32 bytes, vLLM's default)
* ``sha256_cbor`` sha256 over canonical CBOR (reproducible outside Python)
* ``xxhash``      xxh3_128 over the pickle bytes (16 bytes)
* ``xxhash_cbor`` xxh3_128 over canonical CBOR

``NONE_HASH = hash_fn(seed)``. The seed is ``"vllm-none-hash"`` (vLLM 0.33's fixed seed for the
cryptographic functions) for **all four** functions unless a seed is given explicitly
(``--hash-seed`` of replay, stats, cluster and script). vLLM itself reads ``PYTHONHASHSEED``
when set and otherwise draws a random seed for the xxhash functions; kvcore reads neither, so
every replay is reproducible and two runs of the same trace give the same hashes. To compare
with a vLLM run that used ``PYTHONHASHSEED=S``, pass ``S`` as the seed. There is no
module-level NONE_HASH: each `BlockHasher` carries its own.

Extra keys use 0.33's tagged form, in the order lora + mm + cache_salt:
``("lora", name, path)`` on every block of a LoRA request, ``("mm", identifier, offset - start)``
for each multimodal item overlapping the block, ``("cache_salt", salt)`` on the first block only.
(Prompt-embeds keys are out of scope.)
"""

from __future__ import annotations

import bisect
import hashlib
import pickle
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import cbor2
import xxhash as _xxhash

if TYPE_CHECKING:
    from kvcore.request import Request

DEFAULT_NONE_HASH_SEED = "vllm-none-hash"
_PROTOCOL = pickle.HIGHEST_PROTOCOL
_pickle_dumps = pickle.dumps
_sha256 = hashlib.sha256
_xxh3_128 = _xxhash.xxh3_128_digest
_native: Any = False        # `native_hash()`'s module once looked up (None: not built)


def native_hash() -> Any:
    """`kvcore.engine.native_hash` (sha256 over pickle bytes built in C) on the compiled
    build, else None."""
    global _native
    if _native is False:
        from kvcore import compiled
        _native = compiled.native("kvcore.engine.native_hash")
    return _native


def sha256(obj: Any) -> bytes:
    return _sha256(_pickle_dumps(obj, protocol=_PROTOCOL)).digest()


def sha256_cbor(obj: Any) -> bytes:
    return _sha256(cbor2.dumps(obj, canonical=True)).digest()


def xxhash(obj: Any) -> bytes:
    return _xxh3_128(_pickle_dumps(obj, protocol=_PROTOCOL))


def xxhash_cbor(obj: Any) -> bytes:
    return _xxh3_128(cbor2.dumps(obj, canonical=True))


HASH_FUNCTIONS: dict[str, Callable[[Any], bytes]] = {
    "sha256": sha256, "sha256_cbor": sha256_cbor, "xxhash": xxhash, "xxhash_cbor": xxhash_cbor,
}


def get_hash_fn_by_name(name: str) -> Callable[[Any], bytes]:
    try:
        return HASH_FUNCTIONS[name]
    except KeyError:
        raise ValueError(f"Unsupported hash function: {name!r} "
                         f"(one of {', '.join(HASH_FUNCTIONS)})") from None


def none_hash(hash_fn: Callable[[Any], bytes], seed: str | None = None) -> bytes:
    """The parent hash of every first block: ``hash_fn(seed)``."""
    return hash_fn(DEFAULT_NONE_HASH_SEED if seed is None else seed)


def hash_block_tokens(hash_fn: Callable[[Any], bytes], parent_block_hash: bytes | None,
                      curr_block_token_ids, extra_keys: tuple | None = None, *,
                      none_hash_value: bytes) -> bytes:
    """The chained hash of one full block (vLLM's `hash_block_tokens`)."""
    if not parent_block_hash:
        parent_block_hash = none_hash_value
    return hash_fn((parent_block_hash, tuple(curr_block_token_ids), extra_keys))


# --- extra keys ---------------------------------------------------------------------------

def _mm_extra_keys(request: Request, start: int, end: int, start_mm_idx: int
                   ) -> tuple[list, int]:
    feats = request.mm_features
    if not feats:
        return [], start_mm_idx
    last = feats[-1]
    if last.offset + last.length <= start:
        # Past every item (late prefill, decode): nothing to look at.
        return [], start_mm_idx
    if start_mm_idx < 0:
        start_mm_idx = len(feats) + start_mm_idx
    keys = []
    idx = start_mm_idx
    while idx < len(feats):
        f = feats[idx]
        if end <= f.offset:
            break  # the block ends before this item starts
        if start >= f.offset + f.length:
            idx += 1  # the block is past this item
            continue
        keys.append(("mm", f.identifier, f.offset - start))
        if end >= f.offset + f.length:
            idx += 1  # the item ends in this block; the next may start here too
        else:
            break
    return keys, idx


def generate_block_hash_extra_keys(request: Request, start_token_idx: int, end_token_idx: int,
                                   start_mm_idx: int) -> tuple[tuple | None, int]:
    """Extra keys of the block ``[start, end)`` and the mm index to resume at."""
    mm_keys, next_idx = _mm_extra_keys(request, start_token_idx, end_token_idx, start_mm_idx)
    keys: list = []
    lora = request.lora_request
    if lora is not None:
        keys.append(("lora", lora.lora_name, lora.lora_path))
    keys.extend(mm_keys)
    if start_token_idx == 0 and request.cache_salt:
        keys.append(("cache_salt", request.cache_salt))
    return (tuple(keys) if keys else None), next_idx


def generate_lookahead_block_hash_extra_keys(request: Request, start_token_idx: int,
                                             end_token_idx: int, start_mm_idx: int
                                             ) -> tuple[tuple | None, int]:
    """With one lookahead token (EAGLE): the keys of ``[start, end + 1)`` and the mm index
    rewound to the items still open at ``end`` (vLLM's function of this name), for the block
    hash (`kvcore.lookahead_hashes`) and its `BlockStored` event alike."""
    keys, mm_idx = generate_block_hash_extra_keys(request, start_token_idx, end_token_idx + 1,
                                                  start_mm_idx)
    feats = request.mm_features
    while mm_idx > 0 and feats[mm_idx - 1].offset + feats[mm_idx - 1].length > end_token_idx:
        mm_idx -= 1
    return keys, mm_idx


def mm_index_for_window(request: Request, start: int) -> int:
    """Index of the first mm item that ends after ``start`` (vLLM's window lookup)."""
    feats = request.mm_features
    return bisect.bisect_left(feats, start + 1, key=lambda f: f.offset + f.length)


def to_event_extra_keys(extra_keys: list[tuple | None]) -> list | None:
    """Events publish untagged keys: bare lora name / salt, ``(identifier, offset)`` for mm."""
    if not extra_keys:
        return None
    return [None if keys is None
            else tuple(k[1:] if k[0] == "mm" else k[1] for k in keys)
            for keys in extra_keys]


# --- the per-request hasher ---------------------------------------------------------------

class BlockHasher:
    """Computes a request's block hashes incrementally (vLLM's `get_request_block_hasher`).

    Called with a request, it hashes every *full* block after the ones already in
    ``request.block_hashes`` and returns the new hashes. The request calls it when created and
    after every appended output token, so blocks filled by decode tokens get hashed too (and a
    resumed request can hit blocks holding its own earlier output).
    """

    __slots__ = ("block_size", "hash_fn", "hash_name", "lookahead", "none_hash", "seed")

    def __init__(self, block_size: int, hash_name: str = "sha256", seed: str | None = None,
                 lookahead: bool = False):
        self.block_size = block_size
        # vLLM's num_hash_lookahead_tokens of 1 (EAGLE with prefix caching): a block's hash
        # also covers the token after it, so it exists once that token does
        self.lookahead = lookahead
        self.hash_name = hash_name
        self.hash_fn = get_hash_fn_by_name(hash_name)
        self.seed = DEFAULT_NONE_HASH_SEED if seed is None else seed
        self.none_hash = self.hash_fn(self.seed)

    def __call__(self, request: Request) -> list[bytes]:
        return self.hash_after(request, request.block_hashes)

    def hash_after(self, request: Request, hashes: list[bytes]) -> list[bytes]:
        """The hashes of ``request``'s full blocks after the first ``len(hashes)``, whose hashes
        ``hashes`` are (the request's own, or an earlier request's that shares them:
        `kvcore.engine.prompt_prefixes`)."""
        if self.lookahead:
            from kvcore.lookahead_hashes import lookahead_hashes

            return lookahead_hashes(self, request, hashes)
        bs = self.block_size
        start = len(hashes) * bs
        num_tokens = request.num_tokens
        if start + bs > num_tokens:
            return []
        # the new blocks' tokens only (a request may compute its prompt's tokens on demand);
        # `toks[i]` is the token at position `first + i`
        first = start
        toks = request.token_ids(first, num_tokens - (num_tokens - start) % bs)
        parent = hashes[-1] if hashes else self.none_hash
        out: list[bytes] = []
        if request.lora_request is None and not request.mm_features and not request.cache_salt:
            # Fast path (no extra keys), the same bytes as the general path below.
            i = 0
            end = len(toks)
            if self.hash_name == "sha256":
                native = native_hash()
                if native is not None and len(parent) == 32 and 4 <= bs < 13_000:
                    # the same bytes pickled and hashed in C (`native_hash.pyx`): a decode
                    # block 0.95 us where pickle and hashlib took 2.0 us, a call each
                    blob = native.token_block_hashes(parent, toks, bs)
                    if blob is not None:
                        return native.split_hashes(blob, len(blob) // 32)
                while i < end:
                    parent = _sha256(_pickle_dumps((parent, tuple(toks[i:i + bs]), None),
                                                   protocol=_PROTOCOL)).digest()
                    out.append(parent)
                    i += bs
                return out
            fn = self.hash_fn
            while i < end:
                parent = fn((parent, tuple(toks[i:i + bs]), None))
                out.append(parent)
                i += bs
            return out
        mm_idx = 0
        if start > 0 and request.mm_features:
            last = request.mm_features[-1]
            if last.offset + last.length > start:
                mm_idx = mm_index_for_window(request, start)
        fn = self.hash_fn
        while start + bs <= num_tokens:
            extra, mm_idx = generate_block_hash_extra_keys(request, start, start + bs, mm_idx)
            parent = fn((parent, tuple(toks[start - first:start - first + bs]), extra))
            out.append(parent)
            start += bs
        return out


class BlockHashListWithBlockSize:
    """A coarser view of fine block hashes (0.33): element i is the hash of the *last* fine
    block inside coarse block i, which already fingerprints the whole prefix."""

    __slots__ = ("block_hashes", "scale_factor")

    def __init__(self, block_hashes: list[bytes], hash_block_size: int, target_block_size: int):
        assert target_block_size % hash_block_size == 0
        self.block_hashes = block_hashes
        self.scale_factor = target_block_size // hash_block_size

    def __len__(self) -> int:
        return len(self.block_hashes) // self.scale_factor

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return [self[i] for i in range(*idx.indices(len(self)))]
        if idx < 0:
            idx += len(self)
        return self.block_hashes[(idx + 1) * self.scale_factor - 1]

    def __iter__(self):
        s = self.scale_factor
        return iter(self.block_hashes[s - 1::s][:len(self)])


def resolve_block_hashes(block_hashes, hash_block_size: int, block_size: int):
    """The hash list at ``block_size`` granularity (the list itself when sizes match)."""
    if block_size == hash_block_size:
        return block_hashes
    if isinstance(block_hashes, BlockHashListWithBlockSize):
        return block_hashes
    return BlockHashListWithBlockSize(block_hashes, hash_block_size, block_size)
