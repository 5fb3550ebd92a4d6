"""`kvcli stats`' `partial_block` misses: a shared prefix that ends inside a block (the admit
lines' `first_tokens` key each block by the hash before it and its first token), on hand-built
event streams whose expected numbers are worked out in the comments."""

from __future__ import annotations

from stats_streams import Stream

from kvcore.analysis.stats import stats_from_lines


def report(s: Stream) -> dict:
    lines = s.lines()
    return stats_from_lines("t.jsonl", lines[0], iter(lines[1:]))


def partial_stream(with_first_tokens: bool = True) -> Stream:
    """Block size 4. Keys are (hash of the block before, or 0 for block 0; first token)."""
    s = Stream(block_size=4, num_blocks=20)

    def admit(req, prompt, hit, hashes, first):
        extra = {"first_tokens": [first]} if with_first_tokens else {}
        return s.arrive(req, prompt).admit(req, prompt, hit, [hashes], **extra)

    # A: tokens 1..10: blocks 101 (1-4), 102 (5-8), tail 9, 10 -> cold x2, tail 2 tokens
    admit("A", 10, 0, [101, 102], [1, 5, 9])
    s.allocate("A", [1, 2, 3]).cache("A", [1, 2], [101, 102])
    s.at(1).finish("A").free("A", [3, 2, 1], freed=[3, 2, 1], evictable=[2, 1])
    # B: A's 9 tokens then 70, 71, 72: hit 8; block 201 starts with 9 after 102, where A's
    # prompt ended inside the block (key (102, 9) -> A's tail) -> partial_block
    s.at(2)
    admit("B", 12, 8, [101, 102, 201], [1, 5, 9])
    s.touch("B", [1, 2], [101, 102]).allocate("B", [4]).cache("B", [4], [201])
    s.at(3).finish("B").free("B", [4, 2, 1], evictable=[4, 2, 1])
    # C: 1..6 then 60, 61: hit 4; block 301 starts with 5 after 101 like A's block 102, which
    # then went on differently -> partial_block
    s.at(4)
    admit("C", 8, 4, [101, 301], [1, 5])
    s.touch("C", [1], [101]).allocate("C", [5]).cache("C", [5], [301])
    s.at(5).finish("C").free("C", [5, 1], evictable=[5, 1])
    # D: 1..4 then 80..83: hit 4; key (101, 80) never seen -> cold
    s.at(6)
    admit("D", 8, 4, [101, 401], [1, 80])
    s.touch("D", [1], [101]).allocate("D", [6]).cache("D", [6], [401])
    s.at(7).finish("D").free("D", [6, 1], evictable=[6, 1])
    # E and F in one step, the same 8 new tokens: F is admitted before E caches, so F's blocks
    # were seen (the same hashes under the same keys) but never cached -> cold, not partial
    s.at(8)
    admit("E", 8, 0, [501, 502], [90, 94])
    s.allocate("E", [7, 8])
    admit("F", 8, 0, [501, 502], [90, 94])
    s.allocate("F", [9, 10]).cache("E", [7, 8], [501, 502]).cache("F", [9, 10], [501, 502])
    s.at(9).finish("E").free("E", [8, 7], evictable=[8, 7])
    s.finish("F").free("F", [10, 9], evictable=[10, 9])
    return s.end()


def test_partial_block_a_shared_prefix_ending_inside_a_block():
    m = report(partial_stream())["misses"]
    # A: cold 8 + tail 2; B: partial 4 (hit 8); C: partial 4 (hit 4); D: cold 4 (hit 4);
    # E, F: cold 8 each. Prompt 10 + 12 + 8 * 4 = 54 = hits 16 + misses 38.
    assert m["tokens"] == {"cold": 28, "evicted": 0, "partial_block": 10, "last_token": 0,
                           "window": 0, "domain": 0, "in_flight": 0, "unknown": 0, "mamba_state": 0}
    assert m["blocks"]["partial_block"] == 2 and m["blocks"]["cold"] == 7
    assert m["requests"]["partial_block"] == 3      # A (tail), B, C: each once
    assert m["missed_tokens"] == 38
    # Without first_tokens the same blocks are cold (only the tail is partial)
    m = report(partial_stream(with_first_tokens=False))["misses"]
    assert m["tokens"]["partial_block"] == 2 and m["tokens"]["cold"] == 36


def test_partial_keys_remember_warmup_admissions():
    # A is in the warm-up (not counted) but its prompt is still "seen": B's block 201 is partial
    s = Stream(block_size=4, num_blocks=10)
    s.arrive("A", 6).admit("A", 6, 0, [[101]], counted=False, first_tokens=[[1, 5]])
    s.allocate("A", [1, 2]).cache("A", [1], [101])
    s.at(1).finish("A").free("A", [2, 1], evictable=[1])
    s.at(2).arrive("B", 8).admit("B", 8, 4, [[101, 201]], first_tokens=[[1, 5]])
    s.touch("B", [1], [101]).allocate("B", [3]).cache("B", [3], [201])
    s.at(3).finish("B").free("B", [3, 1], evictable=[3, 1])
    m = report(s.end())["misses"]
    assert m["tokens"]["partial_block"] == 4 and m["tokens"]["cold"] == 0
