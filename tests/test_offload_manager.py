"""The CPU tier's manager (kvcore/offload) against vLLM 0.33.0's `CPUOffloadingManager`.

Every op script in `data/offload_cases/manager/` (recorded by the oracle's maintainers) and in
`data/offload_manager_fresh/` (our random scripts, `make_ops.py`, answered by
`oracle offload_manager`) must be answered line for line: results, slots, victims, LRU ranks,
ARC lists and target, offer counts, events, stats and assertion messages.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from kvcore.errors import InputError
from kvcore.offload.keys import HIT, HIT_PENDING, MISS, ReqContext, make_key
from kvcore.offload.manager import CPUOffloadingManager
from kvcore.offload.manager_reports import drain_events, reduce_stats
from kvcore.offload.op_script import run_ops

DATA = Path(__file__).parent / "data"
SCRIPTS = sorted([*(DATA / "offload_cases" / "manager").glob("*.ops.jsonl"),
                  *(DATA / "offload_manager_fresh").glob("*.ops.jsonl")])


@pytest.mark.parametrize("ops", SCRIPTS, ids=lambda p: p.name.split(".")[0])
def test_answers_like_vllm(ops: Path) -> None:
    expected = [orjson.loads(x) for x in ops.with_name(
        ops.name.replace(".ops.", ".expected.")).read_bytes().splitlines()]
    got = list(run_ops(ops.read_bytes().splitlines(), str(ops)))
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        assert g == e


def test_the_fixtures_cover_the_hard_parts() -> None:
    text = b"".join(p.with_name(p.name.replace(".ops.", ".expected.")).read_bytes()
                    for p in SCRIPTS)
    assert b'"error": "AssertionError: Chunk key' in text
    assert b'"result": null, "events"' in text          # failed offers
    assert b'"metadata_only": true' in text
    assert b'"target_t1_size": 2.0' in text           # ARC adapted
    assert b'"offer_counts"' in text


def K(n: int) -> bytes:
    return make_key(n.to_bytes(32, "big"))


def request(name: str, *keys: int) -> ReqContext:
    ctx = ReqContext(name)
    for i, k in enumerate(keys):
        ctx.set_position(K(k), 16 * (i + 1))
    return ctx


def test_lru_evicts_tails_first_and_never_the_offer() -> None:
    m = CPUOffloadingManager(4, "lru", enable_events=True)
    a = request("A", 1, 2, 3)
    m.on_new_request(a)
    offer = m.prepare_store([K(1), K(2), K(3)], a)
    assert offer is not None and offer.chunks == [0, 1, 2]
    assert [m.lookup(K(k)) for k in (1, 3, 9)] == [HIT_PENDING, HIT_PENDING, MISS]
    m.complete_store([K(1), K(2), K(3)])
    assert m.lookup(K(1)) == HIT
    m.on_request_finished(a)                     # ranks tail to head: 3 < 2 < 1
    b = request("B", 3, 4, 5)
    # 3 is in the offer (present, ready: reused, protected); 2 new keys, 1 free slot: 1 victim,
    # the lowest rank outside the offer (2; 3 ranks lower but is protected)
    offer = m.prepare_store([K(3), K(4), K(5)], b)
    assert offer is not None
    assert offer.keys_to_store == [K(4), K(5)] and offer.evicted == [K(2)]
    assert offer.chunks == [3, 1]                # the fresh slot first, then the freed one
    events = drain_events(m)
    assert [(ev.keys, ev.removed) for ev in events] == [([K(1), K(2), K(3)], False),
                                                        ([K(2)], True)]


def test_a_failed_offer_changes_no_slot() -> None:
    m = CPUOffloadingManager(2, "arc")
    a = request("A", 1, 2, 3)
    assert m.prepare_store([K(1), K(2), K(3)], a) is None
    assert (m.num_allocated, m.num_free, reduce_stats(m)["vllm:kv_offload_cpu_allocation_size_sum"]) \
        == (0, 2, 3)


def test_the_allocation_sizes_kept_between_stats_are_one_count_a_size() -> None:
    """Nothing reads the stats in a replay without metrics: the sizes since the last read are
    kept as {keys: offers}, not one entry an offer (a list grew for the whole run)."""
    m = CPUOffloadingManager(4, "lru")
    for i in range(300):
        r = request(f"R{i}", 1000 + 2 * i, 1001 + 2 * i)
        offer = m.prepare_store([K(1000 + 2 * i), K(1001 + 2 * i)], r)
        assert offer is not None
        m.complete_store(offer.keys_to_store)
        m.on_request_finished(r)
    m.prepare_store([K(1)], request("S", 1))
    assert m.allocation_sizes == {2: 300, 1: 1}
    st = reduce_stats(m)
    assert (st["vllm:kv_offload_cpu_allocation_size_count"],
            st["vllm:kv_offload_cpu_allocation_size_sum"]) == (301, 601)
    assert m.allocation_sizes == {} and "vllm:kv_offload_cpu_allocation_size_count" \
        not in reduce_stats(m)


def test_bad_config_is_an_input_error() -> None:
    with pytest.raises(InputError, match="eviction_policy"):
        list(run_ops(['{"config": {"eviction_policy": "fifo"}}'], "x.jsonl"))
    with pytest.raises(InputError, match="unknown config keys"):
        list(run_ops(['{"config": {"chunks": 4}}'], "x.jsonl"))
