"""`kvcli stats` over a block cached under several keys (vLLM's partial entries,
`kvcore/partial_hashes.py`): KV cache groups whose block is coarser than the hash block cache a
block under its full key and under the prompt's last hash-block boundary inside it, and evict
both at once (`evict` with `blocks: [13, 13]`). Stats kept one hash a block and refused kvcli's
own stream ("evict of block 13 with hash ..., which it does not hold")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from stats_streams import Stream
from test_offload_hybrid_events import _replay, _stats

from kvcore.analysis.stats import stats_from_lines
from kvcore.errors import InputError

DATA = Path(__file__).parent / "data"


def two_keys() -> Stream:
    """Block 1 cached under 11 then 12 (a further key), evicted under both in one event, then
    allocated again; block 2 under 21 and 22, its keys evicted one at a time, the further one
    first."""
    s = Stream(block_size=4, num_blocks=6)
    s.at(0).arrive("A", 8).admit("A", 8, 0, [[11, 21]]).allocate("A", [1, 2])
    s.cache("A", [1], [11]).cache("A", [1], [12]).cache("A", [2, 2], [21, 22])
    s.at(1).finish("A").free("A", [1, 2], evictable=[1, 2])
    s.at(3).add("evict", "B", 0, blocks=[1, 1], hashes=[11, 12])
    s.add("evict", "B", 0, blocks=[2], hashes=[22])
    s.at(4).add("evict", "B", 0, blocks=[2], hashes=[21]).allocate("B", [1, 2])
    return s.end()


@pytest.mark.parametrize("opts", [{}, {"native": False}, {"per_block": True}])
def test_every_key_of_a_block_is_held_until_it_is_evicted(opts) -> None:
    lines = two_keys().lines()
    r = stats_from_lines("t.jsonl", lines[0], iter(lines[1:]), **opts)
    e = r["eviction"]
    assert e["evictions"] == 4                      # keys, as the stream's entries
    # each block is evicted once, when its last key goes: block 1 at step 3, block 2 at 4
    assert (e["lifetime_steps"]["count"], e["lifetime_steps"]["min"],
            e["lifetime_steps"]["max"]) == (2, 3, 4)
    assert e["idle_before_evict_steps"]["count"] == 2


def test_a_key_the_block_does_not_hold_is_still_refused() -> None:
    s = Stream(block_size=4, num_blocks=6)
    s.at(0).arrive("A", 4).admit("A", 4, 0, [[11]]).allocate("A", [1])
    s.cache("A", [1], [11]).cache("A", [1], [12])
    s.add("evict", "A", 0, blocks=[1, 1], hashes=[12, 13]).end()
    lines = s.lines()
    with pytest.raises(InputError, match="t.jsonl:7: bad 'evict' event: evict of block 1 with hash 13, which it does not hold"):
        stats_from_lines("t.jsonl", lines[0], iter(lines[1:]))


def test_ox109_reads_back_with_the_replays_totals(tmp_path: Path) -> None:
    """ox109: groups of 32, 32 and 16 tokens, hash block 16. x109r0 (123 tokens) caches its
    block 13 under the 128-token key and under 112 tokens' (the prompt's last boundary); x109r1
    evicts both at step 23. Stats' totals are the replay's summary: 1304 prompt tokens, 448 hit,
    72 evictions (keys), and 68 blocks evicted (72 keys less the 4 second keys of a block)."""
    s, lines, _ = _replay(DATA / "offload_mixed" / "ox109.trace.jsonl", tmp_path)
    r = _stats(lines)
    assert (s.prompt_tokens, s.hit_tokens, s.evictions) == (1304, 448, 72)
    assert (r["reuse"]["prompt_tokens"], r["reuse"]["hit_tokens"],
            r["eviction"]["evictions"]) == (1304, 448, 72)
    evicts = [ev for ev in map(json.loads, lines[1:]) if ev["kind"] == "evict"]
    doubled = sum(len(ev["blocks"]) - len(set(ev["blocks"])) for ev in evicts)
    assert doubled == 4
    assert r["eviction"]["lifetime_steps"]["count"] == 72 - doubled
    assert r["misses"]["missed_tokens"] + r["reuse"]["hit_tokens"] == 1304
