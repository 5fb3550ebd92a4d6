"""Prompt hashes computed ahead on a second thread (`kvcore.engine.hash_ahead`,
`native_ahead.pyx`; compiled build): the same bytes as `BlockHasher`'s, handed over once, None
wherever the job is not there (the replay's thread then hashes as before), and a replay with
the thread writes exactly what one without it writes."""

from __future__ import annotations

import io
import random
import threading
from contextlib import contextmanager

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvcore import compiled
from kvcore.engine import hash_ahead
from kvcore.engine.events import JsonlEvents
from kvcore.engine.hash_memo import TraceBlockHasher
from kvcore.engine.replay import ReplayOptions, replay
from kvcore.hashing import BlockHasher
from kvcore.request import Request
from kvcore.traces.request import TraceRequest

native = compiled.native("kvcore.engine.native_ahead")
pytestmark = pytest.mark.skipif(native is None, reason="the thread needs the compiled build")


def trace_request(i: int, ids: list[int], prompt_len: int, tb: int) -> TraceRequest:
    return TraceRequest(index=i, line=i + 1, id=str(i), arrival_ms=float(i), arrival_step=0,
                        prompt_len=prompt_len, output_len=3, hash_ids=ids,
                        trace_block_size=tb)


def plain_hashes(tr: TraceRequest, bs: int) -> list[bytes]:
    return Request(tr.id, tr.prompt_tokens(), BlockHasher(bs)).block_hashes


def ahead_of(trs: list[TraceRequest], bs: int, window: int = 512):
    jobs = [(tr.index, tr.hash_ids, tr.trace_block_size, tr.prompt_len)
            if hash_ahead.eligible(tr, bs) else (tr.index, None, 0, 0) for tr in trs]
    return native.HashAhead(BlockHasher(bs).none_hash, bs, jobs, len(trs), window, 64 << 20)


def run_thread(ahead) -> threading.Thread:
    t = threading.Thread(target=ahead.run, daemon=True)
    t.start()
    return t


@settings(max_examples=60, deadline=None)
@given(bs=st.sampled_from([4, 16, 32]), per=st.sampled_from([1, 2, 4]),
       data=st.data())
def test_the_same_bytes_as_the_block_hasher(bs, per, data):
    """Small ids (tokens pickled as BININT1 / BININT2), large ones (BININT, up to 2**31 - 1),
    partial last trace blocks, prompts shorter than one engine block."""
    tb = bs * per
    top = (1 << 31) // tb - 1
    trs = []
    for i in range(data.draw(st.integers(1, 6))):
        n = data.draw(st.integers(0, 5))
        ids = data.draw(st.lists(st.one_of(st.integers(0, 300), st.integers(top - 50, top)),
                                 min_size=n, max_size=n))
        plen = max(0, (n - 1) * tb) + (data.draw(st.integers(1, tb)) if n else 0)
        trs.append(trace_request(i, ids, plen, tb))
    ahead = ahead_of(trs, bs)
    t = run_thread(ahead)
    for tr in trs:
        got = ahead.take(tr.index)
        assert got == plain_hashes(tr, bs)
        # each object's hash, stored by the thread, is the one Python computes for a copy
        assert [hash(h) for h in got] == [hash(bytes(bytearray(h))) for h in got]
        assert ahead.take(tr.index) is None         # handed over once
    t.join()


def test_not_eligible_unknown_and_dropped_jobs_answer_none():
    bs, tb = 16, 64
    trs = [trace_request(i, [i + 1, 7], 2 * tb, tb) for i in range(10)]
    trs[3].lora = "adapter"                                 # extra keys: not hashed ahead
    trs[4].hash_ids = [(1 << 31) // tb]                     # a token past 2**31 - 1
    trs[4].prompt_len = tb
    ahead = ahead_of(trs, bs, window=2)
    t = run_thread(ahead)
    assert ahead.take(3) is None and ahead.take(4) is None
    assert ahead.take(-1) is None and ahead.take(10) is None
    assert ahead.take(8) == plain_hashes(trs[8], bs)     # built first (e.g. by priority)
    assert ahead.take(2) is None                         # more than 2 behind 8: dropped
    assert ahead.take(6) == plain_hashes(trs[6], bs)     # within the window
    assert ahead.take(9) == plain_hashes(trs[9], bs)
    t.join()


def test_close_stops_a_thread_waiting_far_ahead():
    bs, tb = 16, 64
    trs = [trace_request(i, [i + 1], tb, tb) for i in range(50)]
    ahead = ahead_of(trs, bs, window=1)
    t = run_thread(ahead)
    assert ahead.take(0) == plain_hashes(trs[0], bs)
    t.join(0.2)
    assert t.is_alive()             # one ahead of the last taken: it waits for the next take
    ahead.close()
    t.join(5)
    assert not t.is_alive()
    assert ahead.take(30) is None   # never computed: the caller hashes it itself


def test_the_hasher_takes_them_where_it_would_hash_them():
    bs, tb = 16, 64
    trs = [trace_request(i, [0, i + 5000], 2 * tb - 3, tb) for i in range(5)]
    hasher = TraceBlockHasher(bs, traces={tr.id: tr for tr in trs})
    order = trs[3:] + trs[1:3]          # built in this order; request 0 is not replayed
    running = hash_ahead.start(hasher, order)
    assert running is not None and hasher.ahead is not None
    taken = []
    real = hasher.ahead

    class Spy:
        def take(self, index):
            got = real.take(index)
            taken.append(got is not None)
            return got

    hasher.ahead = Spy()
    for tr in order:
        assert Request(tr.id, tr.prompt_tokens(), hasher).block_hashes == plain_hashes(tr, bs)
    assert taken == [True] * 4 and not hasher.memo     # the trace-block table never ran
    tr = trs[0]                         # no job: the table hashes it, the same bytes
    assert Request(tr.id, tr.prompt_tokens(), hasher).block_hashes == plain_hashes(tr, bs)
    assert taken == [True] * 4 + [False] and hasher.memo
    hasher.ahead = real
    running.close()
    assert hasher.ahead is None


def mooncake(n: int, seed: int) -> str:
    """A multi-turn hash-id trace: sessions growing their prompts, small ids in common."""
    rng = random.Random(seed)
    sessions: list[list[int]] = [[0, 1] for _ in range(6)]
    lines = []
    next_id = 100
    for i in range(n):
        s = rng.randrange(len(sessions))
        if len(sessions[s]) > 8:                    # a new conversation
            sessions[s] = [0, 1]
        sessions[s] = sessions[s] + list(range(next_id, next_id + rng.randint(1, 3)))
        next_id += 3
        ids = sessions[s]
        lines.append({"timestamp": i * 40, "input_length": len(ids) * 512 - rng.randint(0, 500),
                      "output_length": rng.randint(1, 60), "hash_ids": ids})
    return "".join(orjson.dumps(x).decode() + "\n" for x in lines)


@pytest.mark.parametrize("window", [512, 1])
def test_a_replay_writes_the_same_bytes_with_and_without_it(tmp_path, monkeypatch, window):
    path = tmp_path / "t.jsonl"
    path.write_text(mooncake(120, 5))
    opts = ReplayOptions(block_size=16, num_blocks=600)

    def once(segments):
        monkeypatch.setattr(hash_ahead, "segments", segments)
        steps, reqs, ev = io.BytesIO(), io.BytesIO(), io.BytesIO()
        s = replay(str(path), opts, JsonlEvents(ev), steps_out=steps, requests_out=reqs)
        d = s.to_dict()
        d.pop("wall_time_s")
        lines = ev.getvalue().splitlines()
        return steps.getvalue(), reqs.getvalue(), lines[:-1], d

    real_take = hash_ahead.Segments.take
    taken = []

    def counted(self, index):
        got = real_take(self, index)
        taken.append(got is not None)
        return got

    @contextmanager
    def none(hasher):
        yield None

    monkeypatch.setattr(hash_ahead, "WINDOW", window)
    monkeypatch.setattr(hash_ahead.Segments, "take", counted)
    with_it = once(hash_ahead.segments)
    without = once(none)
    assert len(taken) == 120 and sum(taken) > 100      # (a job dropped behind hashes here)
    assert with_it == without
    assert with_it[3]["evictions"] > 0      # a pool small enough to evict


def test_chunks_start_as_the_requests_built_reach_them(tmp_path, monkeypatch):
    """All 120 requests arrive at once and are built 4 at a time, long after they were read:
    every chunk of 8 is started when the builds reach it, so every take finds its job (chunks
    started as they were read and dropped by count threw most jobs away), with the same bytes
    as hashing on the replay's thread."""
    from kvcore.engine import read_ahead

    path = tmp_path / "t.jsonl"
    path.write_text(mooncake(120, 9))
    opts = ReplayOptions(block_size=16, num_blocks=2000, arrivals="ignore", max_num_seqs=4)
    monkeypatch.setattr(read_ahead, "CHUNK", 8)
    real_take, real_start = hash_ahead.Segments.take, hash_ahead.Segments._start
    taken, running = [], []

    def take(self, index):
        got = real_take(self, index)
        taken.append(got is not None)
        return got

    def start(self, no):
        real_start(self, no)
        running.append(sum(c[2] is not None for c in self.chunks.values()))

    monkeypatch.setattr(hash_ahead.Segments, "take", take)
    monkeypatch.setattr(hash_ahead.Segments, "_start", start)
    ev = io.BytesIO()
    replay(str(path), opts, JsonlEvents(ev))
    assert taken == [True] * 120 and len(running) == 15 and max(running) == 2

    @contextmanager
    def none(hasher):
        yield None

    monkeypatch.setattr(hash_ahead, "segments", none)
    plain = io.BytesIO()
    replay(str(path), opts, JsonlEvents(plain))
    assert ev.getvalue().splitlines()[:-1] == plain.getvalue().splitlines()[:-1]
