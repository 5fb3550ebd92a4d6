"""`hash_array` (numpy arrays written by orjson) gives the bytes `hash_ints` gives, and only a sink
that writes its own JSON gets arrays: an in-process consumer always sees lists of ints."""

from __future__ import annotations

import hashlib
import io
import random
from pathlib import Path

import orjson

from kvcore.engine.events import CallbackEvents, JsonlEvents
from kvcore.engine.hash_json import hash_array, hash_ints
from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay

SAMPLE = str(Path(__file__).resolve().parents[1] / "traces" / "multiturn-chat.jsonl")


def test_arrays_write_the_same_digits() -> None:
    rng = random.Random(3)
    for n in (0, 1, 11, 12, 13, 200):
        hs = [hashlib.sha256(rng.randbytes(8)).digest() for _ in range(n)]
        hs[:1] = [b"\xff" * 32] * min(n, 1)            # the top bit set: above 2**63
        want = orjson.dumps(hash_ints(hs))
        assert orjson.dumps(hash_array(hs), option=orjson.OPT_SERIALIZE_NUMPY) == want
        assert isinstance(hash_ints(hs), list)


def test_only_a_writing_sink_gets_arrays() -> None:
    assert JsonlEvents(io.BytesIO()).writes_arrays()
    seen: list[dict] = []
    assert not CallbackEvents(seen.append).writes_arrays()
    replay(SAMPLE, ReplayOptions(block_size=16, num_blocks=2048), CallbackEvents(seen.append))
    lists = [e[k] for e in seen for k in ("hashes", "prompt_hashes") if k in e]
    assert len(lists) > 1000
    for v in lists:
        assert type(v) is list
        for x in v:
            assert x is None or type(x) is int or (type(x) is list and all(type(y) is int for y in x))
