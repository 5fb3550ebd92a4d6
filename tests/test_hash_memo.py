"""The replay's trace-block hash table gives exactly `BlockHasher`'s hashes."""

from __future__ import annotations

import random

import pytest

from kvcore.engine.hash_memo import TraceBlockHasher
from kvcore.hashing import BlockHasher
from kvcore.request import Request
from kvcore.traces.request import TraceRequest


def trace_request(i: int, ids: list[int], prompt_len: int, tb: int) -> TraceRequest:
    return TraceRequest(index=i, line=i + 1, id=str(i), arrival_ms=0.0, arrival_step=0,
                        prompt_len=prompt_len, output_len=3, hash_ids=ids,
                        trace_block_size=tb)


@pytest.mark.parametrize("algo", ["sha256", "xxhash"])
@pytest.mark.parametrize("tb, bs", [(64, 16), (64, 64), (48, 16), (40, 16)])
def test_same_hashes_as_the_block_hasher(algo, tb, bs):
    rng = random.Random(7)
    traces = {}
    memo = TraceBlockHasher(bs, algo, limit=5, traces=traces)   # tiny: LRU evictions happen too
    plain = BlockHasher(bs, algo)
    reused = 0
    for i in range(200):
        # shared prefixes from a small id pool, then a random tail; partial last blocks
        n_blocks = rng.randint(1, 6)
        ids = [rng.randint(0, 3) for _ in range(rng.randint(0, n_blocks))]
        # (ids from 2000 on: tokens >= 65536, the direct-pickle path; below: pickle's)
        ids += [rng.choice([rng.randint(4, 50), rng.randint(2000, 2050)])
                for _ in range(n_blocks - len(ids))]
        prompt_len = (n_blocks - 1) * tb + rng.randint(1, tb)
        tr = trace_request(i, ids, prompt_len, tb)
        traces[tr.id] = tr
        before = len(memo.memo)
        a = Request(tr.id, tr.prompt_tokens(), memo)
        b = Request(tr.id, tr.prompt_tokens(), plain)
        reused += before == len(memo.memo) and n_blocks > 1
        assert a.block_hashes == b.block_hashes
        for t in range(40):   # decode blocks take the plain path
            a.append_output_token_ids(10**6 + t)
            b.append_output_token_ids(10**6 + t)
        assert a.block_hashes == b.block_hashes
    assert len(memo.memo) <= 5
    assert reused > 0 or tb % bs


def test_extra_keys_take_the_plain_path():
    from kvcore.request import LoRARequest

    tr = trace_request(0, [1, 2], 128, 64)
    memo = TraceBlockHasher(16, traces={tr.id: tr})
    a = Request("a", tr.prompt_tokens(), memo, lora_request=LoRARequest("x", 1))
    b = Request("a", tr.prompt_tokens(), BlockHasher(16), lora_request=LoRARequest("x", 1))
    assert a.block_hashes == b.block_hashes and not memo.memo


@pytest.mark.parametrize("bs", [4, 16, 64])
def test_direct_pickle_bytes_equal_pickle(bs):
    import hashlib
    import pickle

    from kvcore.engine.hash_memo import _END, _MID, _binint_sections, _pickle_head

    rng = random.Random(bs)
    for base in [65536, 65537, (1 << 31) - 4 * bs, *[rng.randint(65536, 1 << 30)
                                                     for _ in range(30)]]:
        parent = rng.randbytes(32)
        for j, sec in enumerate(_binint_sections(base, 4 * bs, bs)):
            toks = tuple(range(base + j * bs, base + (j + 1) * bs))
            want = pickle.dumps((parent, toks, None), protocol=pickle.HIGHEST_PROTOCOL)
            got = b"".join((_pickle_head(bs), parent, _MID, sec, _END))
            assert got == want
            assert hashlib.sha256(got).digest() == hashlib.sha256(want).digest()


@pytest.mark.parametrize("bs", [13000, 13200])
def test_huge_blocks_take_the_pickle_path_where_pickle_splits_frames(bs):
    """Past pickle's 64 KiB frame target the direct bytes would differ: the hasher must not use them."""
    import pickle

    from kvcore.engine.hash_memo import _END, _FRAME_TARGET, _MID, _binint_sections, _frame_size

    base = 70000
    sec = _binint_sections(base, bs, bs)[0]
    want = pickle.dumps((b"x" * 32, tuple(range(base, base + bs)), None),
                        protocol=pickle.HIGHEST_PROTOCOL)
    direct_ok = _frame_size(bs) < _FRAME_TARGET
    assert (TraceBlockHasher(bs).head is not None) == direct_ok
    if direct_ok:
        from kvcore.engine.hash_memo import _pickle_head
        assert b"".join((_pickle_head(bs), b"x" * 32, _MID, sec, _END)) == want


def test_native_hasher_gives_the_pickle_hashes():
    """The compiled build's C hasher (`native_hash.pyx`): sha256 over exactly the bytes
    `pickle.dumps((parent, tokens, None), 5)` gives, for several block sizes and parents; bad
    arguments refused. (The pure suite has no native hasher: there it checks that.)"""
    import hashlib
    import os
    import pickle

    from kvcore.engine import hash_memo
    from kvcore.hashing import native_hash

    mod = native_hash()
    if mod is None:
        assert os.environ.get("KVCLI_TEST_COMPILED", "") in ("", "0"), "compiled, no hasher"
        pytest.skip("no native hasher (pure, or not built)")
    native = mod.trace_block_hashes
    rng = random.Random(3)
    for bs in (4, 16, 64, 1000):
        parent = BlockHasher(bs).none_hash
        for _ in range(5):
            k = rng.randint(0, 4)
            base = rng.randint(65536, (1 << 31) - k * bs)
            blob = native(hash_memo._pickle_head(bs), parent, base, k, bs)
            assert len(blob) == 32 * k
            p = parent
            for i in range(k):
                toks = tuple(range(base + i * bs, base + (i + 1) * bs))
                p = hashlib.sha256(pickle.dumps((p, toks, None), protocol=5)).digest()
                assert blob[32 * i:32 * (i + 1)] == p
            if k:
                parent = blob[-32:]
    head = hash_memo._pickle_head(16)
    for args in ((head, b"x" * 31, 65536, 1, 16), (head, parent, 65535, 1, 16),
                 (head, parent, (1 << 31) - 15, 1, 16), (head, parent, 65536, 1, 0)):
        with pytest.raises(ValueError):
            native(*args)


def test_native_token_blocks_equal_pickle_and_fall_back():
    """`native_hash.token_block_hashes` (BlockHasher's sha256 path on the compiled build): the
    pickle's int opcodes by size (BININT1 / BININT2 / BININT, at their edges), several block
    sizes, a partial block left out; None (the Python path) for a token that is no int in
    0 .. 2**31 - 1 (negative, 2**31, a bool, a float). `BlockHasher` itself then agrees with
    the pure pickle + sha256 on random requests."""
    import hashlib
    import os
    import pickle

    from kvcore.hashing import native_hash

    mod = native_hash()
    if mod is None:
        assert os.environ.get("KVCLI_TEST_COMPILED", "") in ("", "0"), "compiled, no hasher"
        pytest.skip("no native hasher (pure, or not built)")
    rng = random.Random(11)
    edges = [0, 1, 255, 256, 65535, 65536, (1 << 31) - 1]
    for bs in (4, 5, 16, 33):
        parent = BlockHasher(bs).none_hash
        toks = edges + [rng.choice([rng.randrange(256), rng.randrange(65536),
                                    rng.randrange(1 << 31)]) for _ in range(5 * bs)]
        blob = mod.token_block_hashes(parent, toks, bs)
        p, want = parent, []
        for i in range(len(toks) // bs):
            p = hashlib.sha256(pickle.dumps((p, tuple(toks[i * bs:(i + 1) * bs]), None),
                                            protocol=5)).digest()
            want.append(p)
        assert mod.split_hashes(blob, len(want)) == want
        for bad in (-1, 1 << 31, True, 1.0):
            assert mod.token_block_hashes(parent, toks[:bs - 1] + [bad], bs) is None
    # through BlockHasher: decode blocks and token-id prompts, against the plain pickle path
    for _ in range(20):
        bs = rng.choice([4, 16])
        toks = [rng.randrange(1 << 31) for _ in range(rng.randint(0, 100))]
        got = Request("r", toks, BlockHasher(bs)).block_hashes
        p, want = BlockHasher(bs).none_hash, []
        for i in range(len(toks) // bs):
            p = hashlib.sha256(pickle.dumps((p, tuple(toks[i * bs:(i + 1) * bs]), None),
                                            protocol=5)).digest()
            want.append(p)
        assert got == want
    with pytest.raises(ValueError):
        mod.token_block_hashes(b"x", [1, 2, 3, 4], 4)
    with pytest.raises(ValueError):
        mod.split_hashes(b"x" * 40, 2)
