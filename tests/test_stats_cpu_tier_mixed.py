"""`kvcli stats`' CPU-tier figures over KV cache groups of several block sizes
(tests/data/offload_mixed: each group's chunk is one of its own blocks, keyed by the hash of
its last hash block)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_offload_hybrid_events import _replay, _stats
from test_stats_cpu_window import _against_the_lookup

from kvcore.analysis.stats import StreamingStats

MIXED = Path(__file__).parent / "data" / "offload_mixed"
# the kept runs with a full-attention group beside a windowed one whose reference group (the
# first full one) is hashed at the hash block, so that the misses are told apart
WINDOWED = ["ox5", "ox123", "oxr84", "oxr91"]


@pytest.mark.pure_python    # patches the connector's lookup and the stats' split
@pytest.mark.parametrize("case", WINDOWED)
def test_the_hit_without_windowed_gaps_is_kvclis_own_lookup(case: str, tmp_path: Path,
                                                            monkeypatch) -> None:
    """At every counted admission that missed a block, the hit `cpu_window` reckons (the
    windowed groups' chunks all there) is kvcli's own lookup's (`hybrid_lookup.lookup`, step
    for step vLLM's on these cases) with those chunks all there, each group at its own chunk."""
    _against_the_lookup(MIXED / f"{case}.trace.jsonl", tmp_path, monkeypatch)


def test_a_coarser_windowed_groups_keys_cap_the_reach(tmp_path: Path) -> None:
    """ox5: groups [sliding 16, Mamba, full, sliding 26 of 32-token blocks], block 8 (the
    reference group is the full one, group 2; its chunk is 8 tokens, group 3's 32). x5r6 (59
    tokens) is admitted at step 27 with no GPU hit, its 7 full blocks evicted from the GPU by
    x5r5 and x5r4. vLLM's lookup caps the end at each group's keys: group 3 has one 32-token
    chunk of 59 tokens (`len(offload_keys) * tokens_per_chunk`), so no tier could serve past
    token 32, whatever its windowed chunks: blocks 0-3 are `cpu_window` (32 tokens), blocks
    4-6 stay `evicted` (24; the tier kept their full-attention chunks). Read at one 8-token
    chunk for every group, `kvcli stats` said 56 tokens `cpu_window` (x5r7 likewise: 24
    `cpu_window` after its 32 `window` tokens, now `evicted`). Hits end on the groups' lcm (32
    tokens): x5r10 (98 tokens, no hit) finds the full group holding its first 40 tokens, the
    first 32 `window` (another group stopped the lookup) and the next 8 `partial_block` (no hit
    ends at 40; they were `window`: coarse_reasons.py)."""
    s, lines, _ = _replay(MIXED / "ox5.trace.jsonl", tmp_path)
    report = _stats(lines)
    m = report["misses"]
    assert {k: m["tokens"][k] for k in m["reasons"] if m["tokens"][k]} == {
        "cold": 536, "evicted": 48, "partial_block": 75, "window": 32, "cpu_tier": 32,
        "cpu_window": 144}
    assert m["missed_tokens"] + report["reuse"]["hit_tokens"] == s.prompt_tokens
    feed = StreamingStats(watch="x5r6")
    for x in lines:
        feed(json.loads(x))
    feed.report()
    assert feed.watched() == [{
        "step": 27, "prompt_tokens": 59, "hit_tokens": 0, "missed_tokens": 59,
        "missed": {"cpu_window": 32, "evicted": 24, "partial_block": 3},
        "evicted_by": {"x5r5": 4, "x5r4": 3}}]
    # the tier's own figures are the summary's, keys of every group: the one load (32 tokens)
    # reads 8 chunks, sliding 16's load window of 2 of its 8-token chunks, one Mamba state, the
    # full group's 4 and group 3's one 32-token chunk
    cpu, o = report["cpu_tier"], s.offload
    assert (cpu["cpu_hit_tokens_all_admissions"], cpu["loads"], cpu["chunks_loaded"],
            cpu["gpu_blocks_loaded"], cpu["stores"], cpu["chunks_stored"]) == (
        o["cpu_hit_tokens"], o["load_jobs"], o["chunks_loaded"], o["gpu_blocks_loaded"],
        o["store_jobs"], o["chunks_stored"]) == (32, 1, 8, 8, 31, 104)


def test_the_replays_table_names_each_groups_chunk(tmp_path: Path) -> None:
    """ox1: groups of 16, 16 and 32 tokens, one block a chunk each; the summary's
    `tokens_per_chunk` is group 0's (vLLM's first GroupOffloadConfig), the table said
    '160 chunks x 16 tokens'."""
    from typer.testing import CliRunner

    from kvcli.app import app

    r = CliRunner().invoke(app, ["replay", str(MIXED / "ox1.trace.jsonl"), "--arrivals", "step"])
    assert r.exit_code == 0, r.stderr
    row = next(line for line in r.stdout.splitlines() if line.startswith("│ CPU tier "))
    assert row.split("│")[2].strip() == "160 chunks x 16/16/32 tokens (0.46875 GiB, arc)"
