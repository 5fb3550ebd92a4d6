"""Our event stream: its invariants hold on replays with hits, evictions and preemptions."""

from __future__ import annotations

import io
import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from kvcore.engine.events import CallbackEvents, JsonlEvents
from kvcore.engine.replay import ReplayOptions, replay

ROOT = Path(__file__).resolve().parents[1]
SCHED = ROOT / "tests" / "data" / "sched_cases"     # see tests/data/README.md


def run(trace: str, **opts) -> tuple[list[dict], object]:
    buf = io.BytesIO()
    s = replay(trace, ReplayOptions(**opts), JsonlEvents(buf))
    return [json.loads(x) for x in buf.getvalue().splitlines()], s


CASES = [
    (str(SCHED / "b_preemption.trace.jsonl"), {"arrivals": "step"}),
    (str(SCHED / "d_priority.trace.jsonl"), {"arrivals": "step"}),
    (str(ROOT / "traces" / "multiturn-chat.jsonl"), {"num_blocks": 600}),
    (str(ROOT / "traces" / "shared-prefix.jsonl"), {"mode": "cache", "num_blocks": 200}),
    # A hybrid model: six sliding-window groups and one full-attention group share the pool.
    (str(ROOT / "traces" / "multiturn-chat.jsonl"), {"model": "gemma-3-27b",
                                                      "num_blocks": 3000}),
]


@pytest.mark.parametrize("trace, opts", CASES, ids=lambda x: str(x)[-30:])
def test_event_invariants(trace, opts):
    ev, summary = run(trace, **opts)
    header, body = ev[0], ev[1:]
    assert header["kind"] == "header" and header["schema_version"] == 1
    bs = header["block_size"]
    assert [e["seq"] for e in body] == list(range(len(body)))
    assert body[-1]["kind"] == "end" and body[-1]["summary"]["hit_tokens"] == summary.hit_tokens

    ref = Counter()                    # block -> ref count, rebuilt from the stream
    cached: dict[int, int] = {}        # block -> the hash it holds
    held = defaultdict(Counter)        # request -> blocks it holds references to
    touched = hit_blocks = evicts = 0
    admitted_once: set[str] = set()
    for e in body:
        k = e["kind"]
        if k == "allocate":
            for b in e["blocks"]:
                assert ref[b] == 0, "a fresh block had references"
                assert b not in cached, "a reused block must be evicted first"
                ref[b] = 1
                held[e["req"]][b] += 1
        elif k == "touch":
            touched += len(e["blocks"])
            for b, h in zip(e["blocks"], e["hashes"]):
                assert cached.get(b) == h, "touched a block that does not hold that hash"
                ref[b] += 1
                held[e["req"]][b] += 1
        elif k == "cache":
            for b, h in zip(e["blocks"], e["hashes"]):
                assert ref[b] > 0 and b not in cached
                cached[b] = h
        elif k == "evict":
            assert len(e["blocks"]) == len(e["hashes"]) > 0
            for b, h in zip(e["blocks"], e["hashes"]):
                assert cached.get(b) == h, "evict names a block that was not cached with that hash"
                assert ref[b] == 0
                del cached[b]
                evicts += 1
        elif k == "free":
            freed = []
            for b in e["blocks"]:
                assert held[e["req"]][b] > 0, "freed a block the request did not hold"
                held[e["req"]][b] -= 1
                ref[b] -= 1
                if ref[b] == 0:
                    freed.append(b)
            assert e["freed"] == freed
            assert e["evictable"] == [b for b in freed if b in cached]
        elif k == "admit":
            assert e["hit_tokens"] % bs == 0
            hit_blocks += e["hit_tokens"] // bs
            assert e["resumed"] == (e["req"] in admitted_once)
            admitted_once.add(e["req"])
            assert len(e["prompt_hashes"]) == len(header["groups"])
            assert len(e["prompt_hashes"][0]) == e["prompt_tokens"] // bs or e["resumed"]
            assert len(e["first_tokens"][0]) == -(-e["prompt_tokens"] // bs) or e["resumed"]
    # One evict line per allocation per group: a run of evict lines (distinct groups, one
    # request) comes right before the allocate that reused those blocks.
    i = 0
    while i < len(body):
        if body[i]["kind"] != "evict":
            i += 1
            continue
        j = i
        while body[j]["kind"] == "evict":
            j += 1
        run_ = body[i:j]
        alloc = body[j]
        assert alloc["kind"] == "allocate" and {e["req"] for e in run_} == {alloc["req"]}
        assert len({e["group"] for e in run_}) == len(run_)
        evicted = [b for e in run_ for b in e["blocks"]]
        assert set(evicted) <= set(alloc["blocks"])
        if len(header["groups"]) == 1:
            # in the order the allocation took them from the free queue
            assert evicted == [b for b in alloc["blocks"] if b in set(evicted)]
        i = j
    # Allocations minus frees balance, per request and per block.
    assert all(sum(c.values()) == 0 for c in held.values())
    assert all(v == 0 for v in ref.values())
    if len(header["groups"]) == 1:
        # (windowed groups adopt only the blocks still inside the window)
        assert touched == hit_blocks
    assert evicts == summary.evictions
    counted = [e for e in body if e["kind"] == "admit" and e["counted"]]
    assert sum(e["hit_tokens"] for e in counted) == summary.hit_tokens
    assert sum(e["prompt_tokens"] for e in counted) == summary.prompt_tokens


def test_evictions_and_preemptions_happen_in_these_cases():
    # The invariants above must have had something to bite on.
    _, s = run(*CASES[0][:1], **CASES[0][1])
    assert s.preemptions == 6 and s.evictions > 0
    _, s = run(CASES[3][0], **CASES[3][1])
    assert s.evictions > 0 and s.hit_tokens > 0


def test_admit_precedes_the_block_events_it_causes():
    ev, _ = run(str(SCHED / "a_shared_prefix.trace.jsonl"), arrivals="step")
    for i, e in enumerate(ev):
        if e.get("kind") in ("touch", "allocate") and e["req"] not in {
                x["req"] for x in ev[:i] if x.get("kind") == "admit"}:
            pytest.fail(f"{e['kind']} of {e['req']} before its admit")


def test_callback_sink_matches_the_file_stream():
    got = []
    replay(str(ROOT / "traces" / "shared-prefix.jsonl"), ReplayOptions(mode="cache"),
           CallbackEvents(got.append))
    ev, _ = run(str(ROOT / "traces" / "shared-prefix.jsonl"), mode="cache")
    strip = [{k: v for k, v in e.items() if k != "summary"} for e in ev]
    assert [{k: v for k, v in e.items() if k != "summary"} for e in got] == strip


def test_fast_evict_lines_equal_the_generic_ones():
    fast, slow = io.BytesIO(), io.BytesIO()
    trace = str(ROOT / "traces" / "multiturn-chat.jsonl")
    replay(trace, ReplayOptions(num_blocks=600), JsonlEvents(fast))
    # a sink with its own `emit` gets every line as a dict (the formatted fast path off)
    replay(trace, ReplayOptions(num_blocks=600), CallbackEvents(
        lambda obj: slow.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")))
    a, b = fast.getvalue().splitlines()[1:-1], slow.getvalue().splitlines()[1:-1]
    assert sum(1 for x in a if b'"kind":"evict"' in x) > 100
    assert any(x.count(b",") > 12 for x in a if b'"kind":"evict"' in x)    # multi-block lines
    assert [json.loads(x) for x in a] == [json.loads(x) for x in b]


def test_hashes_json_is_what_orjson_writes_for_the_ints():
    """`hash_json.hashes_json` (in C on the compiled build: native_lines.pyx) against orjson over
    `hash_ints`: hashes of 32, 16, 8 and fewer bytes, 64-bit words with every digit count
    (0, 9, 10, 99, 100, ..., 2**64 - 1), empty and long lists."""
    import os
    import random

    import orjson

    from kvcore import compiled
    from kvcore.engine.hash_json import hash_ints, hashes_json

    if os.environ.get("KVCLI_TEST_COMPILED", "") not in ("", "0"):
        assert compiled.native("kvcore.engine.native_lines") is not None
    rng = random.Random(5)
    words = [0, 1, 9, 10, 99, 100, 2**64 - 1] + [10**k + d for k in range(1, 20) for d in (-1, 0)]
    cases = [[], [bytes(32)], [w.to_bytes(8, "big") for w in words]]
    for size in (32, 16, 8, 7, 3, 1, 0):
        cases.append([rng.randbytes(size) for _ in range(rng.randint(1, 40))])
    cases.append([rng.randbytes(24) + w.to_bytes(8, "big") for w in words])
    for hashes in cases:
        assert hashes_json(hashes) == orjson.dumps(hash_ints(hashes)), hashes
    native = compiled.native("kvcore.engine.native_lines")
    if native is not None:
        with pytest.raises(TypeError):
            native.hashes_json([b"x" * 32, 5])


def test_hash_ints_of_long_lists_of_odd_hashes():
    """The numpy path of `hash_ints` / `hash_array` (12 hashes or more) must give what
    `hashes_to_ints` gives: twelve empty hashes (numpy's view of none raised before) and sizes
    that only add up to the first's (16 + 48 + 32 x 10: read as 32-byte words before)."""
    import orjson

    from kvcore.engine.hash_json import hash_array, hash_ints, hashes_json
    from kvcore.kv_events import hashes_to_ints

    mixed = [b"\x01" * 32, b"\x02" * 16, b"\x03" * 48] + [bytes([i]) * 32 for i in range(9)]
    for hashes in ([b""] * 12, mixed, [b"\x05" * 4] * 20):
        want = hashes_to_ints(hashes)
        assert hash_ints(hashes) == want
        assert orjson.dumps(hash_array(hashes), option=orjson.OPT_SERIALIZE_NUMPY) == \
            orjson.dumps(want)
        assert hashes_json(hashes) == orjson.dumps(want)


def test_stride_json_is_what_orjson_writes_for_the_hash_id_tokens():
    """`hash_json.stride_json` (C: native_lines.pyx) against orjson over `HashIdTokens.tokens`
    (the admit line's first tokens of a hash-id prompt), at strides that divide the trace
    block and ones that do not, ends inside and at the edges of blocks, negative and large
    ids; and the cases it must leave to Python (None)."""
    import os
    import random

    import orjson

    from kvcore import compiled
    from kvcore.engine.hash_json import stride_json
    from kvcore.traces.request import HashIdTokens

    native = compiled.native("kvcore.engine.native_lines")
    if os.environ.get("KVCLI_TEST_COMPILED", "") not in ("", "0"):
        assert native is not None
    if native is None:
        assert stride_json([1, 2], 512, 600, 16) is None
        return
    rng = random.Random(7)
    big = (2**63 - 1 - 512) // 512
    for ids in ([0], [5, 7, 9], [rng.randrange(10**7) for _ in range(60)], [-3, 4, -5],
                [big, -big, 2**31 - 1]):
        for tb in (512, 16, 48, 1):
            length = len(ids) * tb
            for step in (16, 1, 7, 512, 32):
                for end in {0, 1, length, length - 1, length // 2, tb, min(tb + 1, length)}:
                    want = orjson.dumps(HashIdTokens(ids, tb, length).tokens(0, end, step)
                                        if end else [])
                    assert stride_json(ids, tb, end, step) == want, (ids, tb, end, step)
    assert stride_json([1, 2], 512, 1025, 16) is None          # a position past the ids
    assert stride_json([1, True], 512, 1024, 16) is None       # not an int
    assert stride_json([2**62], 512, 512, 16) is None          # a token past int64
    assert stride_json([2**70], 512, 512, 16) is None
    assert stride_json([1], 0, 512, 16) is None and stride_json([1], 512, 512, 0) is None
