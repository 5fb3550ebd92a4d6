"""A numbered line in pieces (`native_pipe`'s segments.pxi): an `admit` line whose lists' digits
the line thread writes is the same text orjson writes for the lists themselves: hashes as their
64-bit event form, a hash-id prompt's first tokens (negative ids too), empty lists, one list
marked twice, the record put before the lines held; a line marking a list it was not given,
or a tokens part that reads past its ids, is refused and leaves the records whole. Needs the
compiled build (the records are native): skipped without it."""

from __future__ import annotations

import hashlib

import orjson
import pytest

from kvcore import compiled
from kvcore.engine.events import ALLOCATE
from kvcore.kv_events import hash_to_int

pipe = compiled.native("kvcore.engine.native_pipe")
pytestmark = pytest.mark.skipif(pipe is None, reason="the records need the compiled build")

H = [hashlib.sha256(bytes([i])).digest() for i in range(5)] + [b"\x01\x02", b""]


def _tokens(ids: list[int], tb: int, end: int, step: int) -> list[int]:
    return [ids[p // tb] * tb + p % tb for p in range(0, end, step)]


def _line(fields: dict) -> bytes:
    return orjson.dumps({"step": 2, "t_ms": 0.5, "kind": "admit", "req": "r", "group": None,
                         **fields}, option=orjson.OPT_APPEND_NEWLINE)


@pytest.mark.parametrize(("hashes", "count", "ids", "tb", "end", "step"), [
    (H, 7, [3, -4, 9], 16, 40, 16),
    (H, 3, [0], 16, 16, 16),
    (H, 0, [], 16, 0, 16),
    (H[:2], 2, [2**40, 7], 64, 100, 16),
])
def test_pieces_become_the_text_orjson_writes(hashes, count, ids, tb, end, step):
    mark = pipe.segment_mark
    want = _line({"prompt_tokens": end, "prompt_hashes": [[hash_to_int(h) for h in
                                                           hashes[:count]], None,
                                                          [hash_to_int(h) for h in hashes[:count]]],
                  "first_tokens": [_tokens(ids, tb, end, step)], "x": "\u0001"})
    line = _line({"prompt_tokens": end, "prompt_hashes": [orjson.Fragment(mark(0)), None,
                                                          orjson.Fragment(mark(0))],
                  "first_tokens": [orjson.Fragment(mark(1))], "x": "\u0001"})
    rec = pipe.Records()
    rec.release(line, [("h", hashes, count), ("s", ids, tb, end, step)])
    got = pipe.Formatter().format(rec.take())
    assert got == b'{"seq":0,' + want[1:]


def test_the_line_goes_before_the_lines_held():
    mark = pipe.segment_mark
    rec = pipe.Records()
    rec.head(b',"step":1,"t_ms":0.5')
    rec.lists(ALLOCATE, 0, [1])
    rec.hold()
    rec.lists(ALLOCATE, 0, [2, 3])
    rec.lists(ALLOCATE, 0, [4])
    rec.release(_line({"first_tokens": [orjson.Fragment(mark(0))]}), [("s", [1], 32, 32, 16)])
    rec.lists(ALLOCATE, 0, [5])
    lines = pipe.Formatter().format(rec.take()).splitlines()
    assert [orjson.loads(x).get("blocks", orjson.loads(x).get("first_tokens")) for x in lines] \
        == [[1], [[32, 48]], [2, 3], [4], [5]]
    assert [orjson.loads(x)["seq"] for x in lines] == list(range(5))


def test_bad_pieces_are_refused_and_leave_the_records_whole():
    mark = pipe.segment_mark
    rec = pipe.Records()
    rec.lists(ALLOCATE, 0, [1])
    rec.hold()
    size = len(rec)
    with pytest.raises(ValueError, match="not given"):
        rec.release(_line({"a": orjson.Fragment(mark(1))}), [("h", H, 1)])
    with pytest.raises(ValueError, match="past its ids"):
        rec.release(_line({"a": orjson.Fragment(mark(0))}), [("s", [1], 16, 40, 16)])
    with pytest.raises(ValueError):
        rec.release(_line({"a": orjson.Fragment(mark(0))}), [("h", H, 99)])
    with pytest.raises(TypeError):
        rec.release(_line({"a": orjson.Fragment(mark(0))}), [("h", ["x"], 1)])
    with pytest.raises(ValueError):
        pipe.segment_mark(64)
    # what AdmitFields asks before it marks a tokens list (else it writes the list itself)
    assert pipe.stride_count([1, 2], 16, 32, 16) == 2
    assert [pipe.stride_count(*a) for a in (([1], 16, 32, 16), ([1], 0, 16, 16),
                                           ([2**62], 16, 16, 16), (["1"], 16, 16, 16))] \
        == [-1] * 4
    assert len(rec) == size and rec.holding
    rec.release()
    assert pipe.Formatter().format(rec.take()).count(b"\n") == 1
