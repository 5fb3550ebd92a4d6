"""`kvcli events listen` on a terminal: the live summary's tally and its rendering."""

from __future__ import annotations

from kvcli import output
from kvcli.live_run import ListenTally


def _batches():
    yield {"seq": 0, "ts": 0.5, "data_parallel_rank": 0, "events": [
        {"type": "BlockStored", "block_hashes": [1, 2, 3], "medium": "GPU"},
        {"type": "BlockStored", "block_hashes": [9], "medium": "CPU"}]}
    yield {"gap": [1, 2]}
    yield {"seq": 3, "ts": 1.25, "data_parallel_rank": 1, "events": [
        {"type": "BlockRemoved", "block_hashes": [7, 8], "medium": "GPU"},
        {"type": "AllBlocksCleared"}]}


def test_tally_counts_blocks_per_rank_and_medium_and_gaps():
    t = ListenTally()
    for rec in _batches():
        t.fold(rec)
    table = t.table()
    assert table.rows == [("0", "CPU", 1, 0, 0), ("0", "GPU", 3, 0, 0), ("1", "-", 0, 0, 1),
                          ("1", "GPU", 0, 2, 0)]
    assert table.title == "2 batch(es), last seq 3, last ts 1.250 s; 1 gap(s), 2 batch(es) missing"


def test_emit_live_draws_the_final_table(capsys):
    t = ListenTally()
    output.emit_live(_batches(), t.fold, t.table)
    out = capsys.readouterr().out
    assert "last seq 3" in out and "blocks removed" in out
