"""A request whose prompt comes as a `TokenSource` (hash-id traces: tokens computed on demand)
reads exactly as one built from the token list: slices, strides, outputs, hashes, events."""

from __future__ import annotations

import random

import pytest

from kvcore.engine.hash_memo import TraceBlockHasher
from kvcore.hashing import BlockHasher
from kvcore.request import Request
from kvcore.traces.request import HashIdTokens, TraceRequest


def _pair(seed: int) -> tuple[Request, Request, TraceRequest]:
    rng = random.Random(seed)
    tb = rng.choice([4, 16, 32, 512])
    n = rng.randrange(1, 6 * tb)
    ids = [rng.randrange(0, 1 << 20) for _ in range(-(-n // tb))]
    tr = TraceRequest(index=0, line=1, id=f"r{seed}", arrival_ms=0.0, arrival_step=0,
                      prompt_len=n, output_len=50, hash_ids=ids, trace_block_size=tb)
    bs = rng.choice([1, 4, 16])
    plain = Request(tr.id, tr.prompt_tokens(), BlockHasher(bs))
    lazy = Request(tr.id, None, BlockHasher(bs), prompt_source=tr.prompt_source(),
                   num_prompt_tokens=n)
    return plain, lazy, tr


@pytest.mark.parametrize("seed", range(40))
def test_a_source_reads_as_the_list(seed: int) -> None:
    plain, lazy, tr = _pair(seed)
    rng = random.Random(1000 + seed)
    assert lazy.block_hashes == plain.block_hashes
    for _ in range(rng.randrange(0, 40)):                  # outputs, one or several at a time
        toks = [rng.randrange(10**6, 2 * 10**6) for _ in range(rng.choice([1, 1, 3]))]
        arg: int | list[int] = toks[0] if len(toks) == 1 else toks
        plain.append_output_token_ids(arg)
        lazy.append_output_token_ids(arg)
        assert lazy.num_tokens == plain.num_tokens
        assert lazy.block_hashes == plain.block_hashes
    full = plain.all_token_ids
    n = len(full)
    for _ in range(60):
        a = rng.randrange(0, n + 1)
        b = rng.randrange(a, n + 3)
        step = rng.choice([1, 1, 2, 3, 16])
        assert lazy.token_ids(a, b, step) == full[a:b:step], (a, b, step)
    assert lazy.output_token_ids == plain.output_token_ids
    assert lazy.prompt_token_ids == plain.prompt_token_ids == tr.prompt_tokens()
    assert lazy._tokens is None                          # nothing above built the list
    assert lazy.all_token_ids == full                    # built once, on demand
    lazy.append_output_token_ids(7)
    plain.append_output_token_ids(7)
    assert lazy.all_token_ids == plain.all_token_ids and lazy.num_tokens == plain.num_tokens


def test_hash_id_tokens_rule() -> None:
    src = HashIdTokens([5, 9, 2], tb=4, length=10)
    assert src.tokens(0, 10) == [20, 21, 22, 23, 36, 37, 38, 39, 8, 9]
    assert src.tokens(3, 9) == [23, 36, 37, 38, 39, 8]
    assert src.tokens(1, 10, 4) == [21, 37, 9]
    assert src.tokens(0, 99) == src.tokens(0, 10)


def test_the_trace_hasher_reads_a_source() -> None:
    for seed in range(20):
        _, lazy, tr = _pair(seed)
        bs = lazy._hash_block_size
        if tr.trace_block_size % bs:
            continue
        hasher = TraceBlockHasher(bs, traces={tr.id: tr})
        again = Request(tr.id, None, hasher, prompt_source=tr.prompt_source(),
                        num_prompt_tokens=tr.prompt_len)
        assert again.block_hashes == lazy.block_hashes
