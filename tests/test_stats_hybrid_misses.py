"""Miss reasons of hybrid models: a block full attention holds with its whole chain, but another
group stopped the lookup, is `window` (sliding window) or `mamba_state` (a Mamba group), never
`evicted` when nothing was evicted; a chain full attention itself broke stays `evicted`."""

from __future__ import annotations

import json

from stats_streams import Stream
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.analysis.stats import stats_from_lines

SWA = [{"type": "full_attention", "block_size": 4},
       {"type": "sliding_window", "block_size": 4, "sliding_window": 8}]
MAMBA = [{"type": "mamba", "block_size": 4}, {"type": "full_attention", "block_size": 4}]


def report(s: Stream) -> dict:
    lines = s.lines()
    return stats_from_lines("t.jsonl", lines[0], iter(lines[1:]))


def _cached_prompt(s: Stream, full: int, other: int, other_hashes: list[int]) -> Stream:
    """A caches blocks 1-4 (hashes 1-4) in the full group, ``other_hashes`` in the other."""
    s.at(0).arrive("A", 16).admit("A", 16, 0, [[1, 2, 3, 4], [1, 2, 3, 4]])
    s.allocate("A", [1, 2, 3, 4], full).cache("A", [1, 2, 3, 4], [1, 2, 3, 4], full)
    s.allocate("A", [5, 6, 7, 8], other)
    held = [4 + h for h in other_hashes]
    s.cache("A", held, other_hashes, other)
    s.at(1).finish("A").free("A", [4, 3, 2, 1], evictable=[4, 3, 2, 1], group=full)
    return s.free("A", [8, 7, 6, 5], evictable=held[::-1], group=other)


def test_a_window_that_holds_the_block_but_not_the_run_before_it_is_window():
    # Gemma's case: the sliding group holds blocks 3-4 of A's prompt, not 1-2 (the window
    # before a junction at block 2): B, with 17 tokens, hits nothing. Blocks 1-4 are all in full
    # attention, so every one is `window`; nothing was evicted (block 3 and 4 were `evicted`,
    # as the sliding group held them)
    s = _cached_prompt(Stream(block_size=4, num_blocks=10, groups=SWA), 0, 1, [3, 4])
    s.at(2).arrive("B", 17).admit("B", 17, 0, [[1, 2, 3, 4], [1, 2, 3, 4]])
    r = report(s.end())
    assert r["eviction"]["evictions"] == 0
    assert r["misses"]["tokens"]["window"] == 16 and r["misses"]["tokens"]["evicted"] == 0
    assert r["misses"]["requests"]["window"] == 1


def test_a_chain_full_attention_broke_is_evicted_even_where_the_window_lacks_the_block():
    # X evicts block 2 from full attention: B's blocks 3-4, still cached in full attention but
    # behind the evicted block, are `evicted` (the chain), not `window` (they were `window`
    # because the sliding group lacked them)
    s = _cached_prompt(Stream(block_size=4, num_blocks=10, groups=SWA), 0, 1, [1, 2])
    s.at(2).arrive("X", 4).admit("X", 4, 0, [[9], [9]])
    s.evict("X", 2, 2, 0).allocate("X", [2], 0).allocate("X", [9], 1)
    s.at(3).finish("X").free("X", [2], freed=[2], group=0).free("X", [9], freed=[9], group=1)
    s.at(4).arrive("B", 17).admit("B", 17, 4, [[1, 2, 3, 4], [1, 2, 3, 4]])
    s.touch("B", [1], [1], 0).touch("B", [5], [1], 1)
    m = report(s.end())["misses"]
    assert m["tokens"]["evicted"] == 12 and m["tokens"]["window"] == 0
    assert m["by_evictor"] == [{"req": "X", "blocks": 1}]


def test_a_mamba_group_without_the_state_is_mamba_state():
    # full attention (group 1) holds A's 4 blocks; the Mamba group holds a state at block 2
    # only: B hits 2 blocks (8 tokens); blocks 3-4 are `mamba_state`, its tail partial_block
    s = _cached_prompt(Stream(block_size=4, num_blocks=10, groups=MAMBA), 1, 0, [2])
    s.at(2).arrive("B", 17).admit("B", 17, 8, [[1, 2, 3, 4], [1, 2, 3, 4]])
    s.touch("B", [1, 2], [1, 2], 1)
    m = report(s.end())["misses"]
    assert m["tokens"]["mamba_state"] == 8 and m["tokens"]["evicted"] == 0
    assert m["tokens"]["partial_block"] == 1
    assert m["reasons"][-1] == "mamba_state"


def test_a_whole_block_prompts_last_block_is_last_token_even_past_a_junction():
    # B is A's 16 tokens, 4 whole blocks: the Mamba state at block 2 gives a hit of 8; block 3
    # is mamba_state, but block 4 could not hit even in full attention (the lookup stops at
    # num_tokens - 1): last_token
    s = _cached_prompt(Stream(block_size=4, num_blocks=10, groups=MAMBA), 1, 0, [2])
    s.at(2).arrive("B", 16).admit("B", 16, 8, [[1, 2, 3, 4], [1, 2, 3, 4]])
    s.touch("B", [1, 2], [1, 2], 1)
    m = report(s.end())["misses"]
    assert (m["tokens"]["mamba_state"], m["tokens"]["last_token"]) == (4, 4)


def test_jamba_replay_misses_nothing_as_evicted_without_an_eviction(tmp_path):
    # (the second request already had 6 full-attention blocks `evicted` with no Mamba state)
    events = tmp_path / "ev.jsonl"
    r = CliRunner().invoke(app, ["replay", "traces/shared-prefix.jsonl", "--model", "jamba-v0.1",
                                 "--num-blocks", "4000", "--events", str(events)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["stats", str(events), "--json"])
    d = json.loads(r.stdout)
    assert d["eviction"]["evictions"] == 0
    tokens = d["misses"]["tokens"]
    assert tokens["evicted"] == 0 and tokens["window"] == 0
    assert (tokens["cold"], tokens["partial_block"], tokens["mamba_state"]) == (18560, 13696,
                                                                                7680)


def test_a_sliding_window_requests_kv_tokens_are_those_of_the_blocks_it_holds():
    from kvcore.analysis.stats.memory import MemoryStats

    m = MemoryStats(usable=63, block_size=16)
    m.request_end(4, 173)       # a window's 4 last blocks of 11: 3 full, the last 13 of 16
    m.request_end(11, 173)      # full attention: all 11 blocks
    m.request_end(3, 48)        # exactly full
    assert m.kv_tokens.summary()["max"] == 173 and sorted(m.kv_tokens.counts) == [48, 61, 173]
    assert sorted(m.empty_slots.counts) == [0, 3]         # (61 was 64: as if the first blocks)
    assert m.empty_slots.counts[3] == 2


def test_sliding_window_only_replay_has_last_block_fragmentation(tmp_path):
    events = tmp_path / "ev.jsonl"
    r = CliRunner().invoke(app, ["replay", "tests/data/sched_cases_hybrid/c_swa_only.trace.jsonl",
                                 "--arrivals", "step", "--events", str(events)])
    assert r.exit_code == 0, r.output
    mem = json.loads(CliRunner().invoke(app, ["stats", str(events), "--json"]).stdout)["memory"]
    # every request ends holding its window's blocks, the last one part filled: empty slots
    # are each one's (-tokens) mod 16, never a whole block (they were all 0 before)
    assert mem["empty_slots_per_request"]["max"] == 15
    assert mem["empty_slots_per_request"]["mean"] == 8.0 and mem["empty_slots_fraction"] == 0.125
