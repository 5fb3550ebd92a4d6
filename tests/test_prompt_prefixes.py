"""Token-id prompts reuse an earlier request's hashes (`kvcore.engine.prompt_prefixes`): every hash
equals `BlockHasher`'s, and the shared prefix is found (multi-turn, system prompts, collisions)."""

from __future__ import annotations

import random
from array import array

import pytest

from kvcore.engine.hash_memo import TraceBlockHasher
from kvcore.engine.prompt_prefixes import PromptPrefixes
from kvcore.hashing import BlockHasher
from kvcore.request import Request
from kvcore.traces.request import TraceRequest


def token_request(i: int, prompt: list[int], with_array: bool) -> TraceRequest:
    return TraceRequest(index=i, line=i + 1, id=f"r{i}", arrival_ms=0.0, arrival_step=0,
                        prompt_len=len(prompt), output_len=0, prompt_token_ids=prompt,
                        prompt_array=array("Q", prompt) if with_array else None)


def conversations(rng: random.Random, n: int, bs: int):
    """(prompt, outputs) pairs: turns that extend an earlier turn's prompt and outputs, new
    conversations on a few system prompts, the odd prompt shorter than a block."""
    systems = [[rng.randrange(1, 50) for _ in range(rng.randrange(1, 6 * bs))] for _ in range(3)]
    done: list[list[int]] = []
    for _ in range(n):
        r = rng.random()
        if done and r < 0.55:
            prompt = list(rng.choice(done))
        elif r < 0.9:
            prompt = list(rng.choice(systems))
        else:
            prompt = []
        # small token values: keys collide (same end block tokens, other content) often
        prompt += [rng.randrange(1, 4) for _ in range(rng.randrange(1, 3 * bs))]
        outputs = [rng.randrange(1, 4) for _ in range(rng.randrange(0, 3 * bs))]
        done.append(prompt + outputs)
        yield prompt, outputs


@pytest.mark.parametrize("algo", ["sha256", "xxhash"])
@pytest.mark.parametrize("bs", [1, 2, 16])
@pytest.mark.parametrize("with_array", [True, False])
def test_same_hashes_as_the_block_hasher(algo, bs, with_array):
    rng = random.Random(bs * 31 + with_array)
    traces: dict[str, TraceRequest] = {}
    memo = TraceBlockHasher(bs, algo, traces=traces)
    # tiny limits: entries are dropped (and looked up after) all the time
    memo.prefixes = PromptPrefixes(bs, token_budget=40 * bs, first_limit=2)
    plain = BlockHasher(bs, algo)
    for i, (prompt, outputs) in enumerate(conversations(rng, 300, bs)):
        tr = token_request(i, prompt, with_array)
        traces[tr.id] = tr
        a = Request(tr.id, prompt, memo)
        b = Request(tr.id, prompt, plain)
        assert a.block_hashes == b.block_hashes
        for t in outputs:
            a.append_output_token_ids(t)
            b.append_output_token_ids(t)
        assert a.block_hashes == b.block_hashes


def test_a_next_turn_reuses_the_whole_previous_turn():
    bs = 4
    memo = TraceBlockHasher(bs)
    plain = BlockHasher(bs)
    first = Request("a", list(range(100, 110)), memo)          # 2 full blocks
    first.append_output_token_ids(list(range(200, 207)))        # 17 tokens: 4 blocks
    assert len(first.block_hashes) == 4
    # the next turn: the previous prompt, its outputs, a new message
    nxt = list(range(100, 110)) + list(range(200, 207)) + [7, 8, 9, 10, 11]
    toks = list(nxt)
    got = memo.prefixes.lookup(toks, array("Q", toks), len(toks) // bs)
    assert got == first.block_hashes                             # through the outputs
    assert Request("b", nxt, memo).block_hashes == Request("b", nxt, plain).block_hashes
    # a prompt that parts from it inside block 2: blocks 0 and 1 only
    other = list(range(100, 109)) + [1, 2, 3, 4, 5, 6, 7]
    assert memo.prefixes.lookup(other, None, 4) == first.block_hashes[:2]
    # nothing in common: nothing reused
    assert memo.prefixes.lookup([9] * 8, None, 2) == []


def test_a_key_collision_is_not_reuse():
    """Two prompts that end on the same key (blocks, last token, the token half a block back)
    but differ earlier: the tokens are compared, not the key."""
    bs = 4
    memo = TraceBlockHasher(bs)
    Request("a", [1, 2, 3, 4, 5, 6, 7, 8], memo)
    toks = [1, 2, 3, 4, 9, 6, 7, 8]                              # block 1 differs, same key
    assert memo.prefixes.lookup(toks, None, 2) == Request("c", [1, 2, 3, 4], memo).block_hashes
    assert Request("b", toks, memo).block_hashes == Request("b", toks, BlockHasher(bs)).block_hashes


def test_extra_keys_are_not_indexed():
    memo = TraceBlockHasher(4)
    Request("a", list(range(8)), memo, cache_salt="s")
    assert not memo.prefixes.ends and not memo.prefixes.firsts
