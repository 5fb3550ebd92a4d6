"""What `kvcli events listen` writes: the live summary's tally and its rendering on a terminal,
and a batch as a JSON line."""

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


def test_bytes_block_hashes_are_written_as_hex():
    """vLLM sends bytes hashes with VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0: `events listen`
    ended in "TypeError: Type is not JSON serializable: bytes" with a traceback."""
    import msgspec
    import orjson
    from live_helpers import BlockRemoved, BlockStored, EventBatch

    from kvcore.live.wire import batch_to_dict, decode_batch

    stored = BlockStored(block_hashes=[b"\x01\x02", b"\xff"], parent_block_hash=b"\xab",
                         token_ids=[1, 2, 3], block_size=16, lora_id=None, medium="GPU",
                         lora_name=None, extra_keys=[(b"\x10", 7), None])
    removed = BlockRemoved(block_hashes=[b"\x01\x02"], medium="GPU")
    payload = msgspec.msgpack.encode(EventBatch(ts=1.5, events=[stored, removed],
                                                data_parallel_rank=0))
    d = batch_to_dict(decode_batch(payload))
    assert [e["block_hashes"] for e in d["events"]] == [["0102", "ff"], ["0102"]]
    assert d["events"][0]["parent_block_hash"] == "ab"
    assert d["events"][0]["extra_keys"] == [["10", 7], None]
    assert d["events"][0]["token_ids"] == [1, 2, 3]
    assert orjson.loads(orjson.dumps(d)) == d


def test_the_tally_counts_batches_skipped_below_first_seq(monkeypatch, capsys):
    from kvcli.live_run import run_listen
    from kvcore.live import subscriber

    def fake(endpoint, *, stats, **kw):
        stats.update(batches=2, replayed=0, skipped=3)
        yield {"seq": 5, "ts": 0.0, "events": [], "data_parallel_rank": 0}
        yield {"seq": 6, "ts": 0.1, "events": [], "data_parallel_rank": 0}

    monkeypatch.setattr(subscriber, "listen", fake)
    assert run_listen("tcp://127.0.0.1:5557", None, "", None, 1.0, 5) == 0
    err = capsys.readouterr().err
    assert err.strip().endswith("2 batch(es), 0 from the replay socket, 3 numbered below "
                                "--first-seq 5 skipped"), err
