"""`listen`: a subscriber to vLLM's KV events (a kvcli replay's, or a real vLLM's) for people
and tests, as vLLM's own example subscriber reads them.

A SUB socket (bound for a wildcard ``tcp://*:PORT``, else connected: an ipc path and an IPv6
host too, which vLLM's publisher binds; `endpoints.listener_binds`) reads ``(topic, seq,
payload)`` messages and yields one dict per batch: ``seq``, ``ts``, ``events``,
``data_parallel_rank`` (vLLM's JSON form, `wire.batch_to_dict`). It checks
that sequence numbers follow each other from the first expected one (0 unless told): a gap is
filled from the publisher's replay socket (a DEALER sends the 8-byte start, the ROUTER answers
with the buffered batches and vLLM's end marker) when one is given, else reported as a
``{"gap": [first, last]}`` record. Every wait has a deadline: it ends after `idle_timeout_s`
without a message, after `count` batches, or when a replay answer does not come in time.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Generator, Iterator
from typing import Any

from kvcore.errors import InputError
from kvcore.live.endpoints import check_endpoint, is_ipv6, listener_binds

REPLAY_TIMEOUT_S = 5.0
# after a quiet idle timeout: a replay socket still up answers at once; a gone one never does
QUIET_REPLAY_TIMEOUT_S = 1.0
# The longest idle timeout: ZMQ's poll takes its milliseconds as a C int (2^31 - 1 ms, ~24.9
# days); 1e300 (or 2,147,484 s) raised OverflowError with a traceback at the first wait.
MAX_IDLE_TIMEOUT_S = (2**31 - 1) // 1000
# vLLM's publisher sends a batch's number as `seq.to_bytes(8, "big")` (unsigned, from 0) and
# reads a replay request's first number back with `int.from_bytes(..., "big")`: the numbers
# that travel are 0 to 2**64 - 1.
SEQ_LIMIT = 1 << 64


def check_first_seq(value: str | int) -> int:
    """A first sequence number to expect (`kvcli events listen --first-seq`, typed), as a
    number; `InputError` (field ``first_seq``) for one that cannot travel."""
    try:
        seq, shown = int(value), str(value)
    except ValueError:
        seq, shown = -1, repr(value)        # (an empty value said "got " and stopped)
    if not 0 <= seq < SEQ_LIMIT:
        raise InputError(f"must be an integer from 0 to 2**64 - 1 (a batch's number travels "
                         f"as 8 unsigned bytes), got {shown}", field="first_seq")
    return seq


def listen(endpoint: str, *, replay_endpoint: str | None = None, topic: str = "",
           idle_timeout_s: float = 10.0, count: int | None = None, first_seq: int = 0,
           stats: dict | None = None) -> Iterator[dict]:
    """The batches as they come (gaps filled or reported); `stats` gets the counts."""
    import zmq

    from kvcore.live.publisher import _open
    from kvcore.live.wire import decode_batch

    check_endpoint(endpoint, "endpoint", connects=not listener_binds(endpoint))
    if replay_endpoint is not None:
        check_endpoint(replay_endpoint, "replay_endpoint", connects=True)
        if replay_endpoint == endpoint:
            # (the replay socket asked the publisher's PUB socket, which never answers: every
            # gap waited out as missing; a replay refuses the same pair)
            raise InputError("the same endpoint as the publisher's (ENDPOINT): the replay "
                             "socket is another one", field="replay_endpoint")
    check_first_seq(first_seq)
    if idle_timeout_s > MAX_IDLE_TIMEOUT_S:
        raise InputError(f"must be at most {MAX_IDLE_TIMEOUT_S:,} s (about 24 days; 0 waits "
                         f"forever), got {idle_timeout_s!r}", field="idle_timeout_s")
    st = stats if stats is not None else {}
    # (bad: batches whose payload did not decode, printed; misframed: messages skipped)
    st.update(batches=0, replayed=0, gaps=0, missing=0, bad=0, misframed=0, restarts=0,
              unanswered=0, skipped=0)
    zctx = zmq.Context()
    sub = zctx.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.SUBSCRIBE, topic.encode("utf-8"))
    sub.setsockopt(zmq.IPV6, int(is_ipv6(endpoint)))
    replay = None
    try:
        # (vLLM binds its publisher: a listener binding the same port is the usual clash)
        _open(sub, endpoint, "endpoint", bind=listener_binds(endpoint),
              in_use="a publisher bound there? connect to it instead, tcp://HOST:PORT; or "
              "another listener")
        if replay_endpoint is not None:
            replay = zctx.socket(zmq.DEALER)
            replay.setsockopt(zmq.LINGER, 0)
            replay.setsockopt(zmq.IPV6, int(is_ipv6(replay_endpoint)))
            _open(replay, replay_endpoint, "replay_endpoint", bind=False)
        expected = first_seq
        last_live = -1                      # the highest sequence number read live
        had: dict[int, int] = {}            # the last replay answer's batches: seq -> crc32
        while count is None or st["batches"] < count:
            if not sub.poll(int(idle_timeout_s * 1000) if idle_timeout_s > 0 else None):
                # Quiet: a listener that joined after the last batch (or missed the last ones)
                # asks the replay socket for what it buffered since `expected` (it asked only
                # on a live batch past a gap, so a late start got nothing); on then.
                late = (_fetch(replay, expected, None, QUIET_REPLAY_TIMEOUT_S) or []) \
                    if replay is not None else []
                had = _digests(late) or had
                expected = yield from _replayed(late, expected, st, count, decode_batch)
                if not late:
                    break
                continue
            frames = sub.recv_multipart()
            if len(frames) != 3 or len(frames[1]) != 8:
                st["misframed"] += 1
                continue
            seq = int.from_bytes(frames[1], "big")
            if seq <= last_live or (seq < expected and st["batches"] > 0
                                    and had.get(seq) != zlib.crc32(frames[2])):
                # One publisher's live numbers only grow: it started again (a new replay on
                # the same port, a restarted vLLM), its numbers from 0 again. Below what the
                # replay socket gave, a number is that batch again only with its bytes (a
                # new run after a listener that read only replayed batches was dropped).
                # Before anything was read, a number below --first-seq is only skipped. A
                # new publisher numbers from 0: those below `seq` were missed (asked for from
                # its replay socket, else a gap; they were not said at all).
                st["restarts"] += 1
                yield {"restart": [max(last_live, expected - 1), seq]}
                expected, had = 0, {}
            last_live = seq
            if seq < expected:
                # already had it (from a replay), or below --first-seq before anything was read
                st["skipped"] += st["batches"] == 0
                continue
            if seq > expected:
                filled: list[tuple[int, bytes]] = []
                if replay is not None:
                    got = _fetch(replay, expected, seq)
                    if got is None:         # no answer (gone, as a finished replay's is)
                        st["unanswered"] += 1
                    filled = got or []
                    had = _digests(filled) or had
                expected = yield from _replayed(filled, expected, st, count, decode_batch)
                if count is not None and st["batches"] >= count:
                    break
                if expected < seq:
                    yield _gap(st, expected, seq)
            yield _record(seq, frames[2], decode_batch, st)
            expected = seq + 1
    finally:
        sub.close(linger=0)
        if replay is not None:
            replay.close(linger=0)
        zctx.term()


def _replayed(got: list[tuple[int, bytes]], expected: int, st: dict, count: int | None,
              decode: Any) -> Generator[dict, None, int]:
    """The records of the replayed batches `got` (what the replay socket still buffers from
    `expected` on): a gap first when its oldest left the buffer, then those that follow on
    without a hole, at most until `count` batches in all; returns the next number expected."""
    st["replayed"] += len(got)
    if got and got[0][0] > expected:
        yield _gap(st, expected, got[0][0])
        expected = got[0][0]
    for seq, payload in got:
        if seq != expected or (count is not None and st["batches"] >= count):
            break
        yield _record(seq, payload, decode, st)
        expected += 1
    return expected


def _digests(got: list[tuple[int, bytes]]) -> dict[int, int]:
    return {seq: zlib.crc32(payload) for seq, payload in got}


def _gap(st: dict, first: int, stop: int) -> dict:
    """The line of batches `first .. stop-1` missed for good, counted."""
    st["gaps"] += 1
    st["missing"] += stop - first
    return {"gap": [first, stop - 1]}


def _record(seq: int, payload: bytes, decode: Any, st: dict) -> dict:
    import msgspec

    from kvcore.live.wire import batch_to_dict

    st["batches"] += 1
    try:
        return {"seq": seq, **batch_to_dict(decode(payload))}
    except (msgspec.DecodeError, msgspec.ValidationError) as err:
        st["bad"] += 1
        return {"seq": seq, "undecodable": str(err)}


def _fetch(replay: Any, first: int, stop: int | None,
           timeout_s: float | None = None) -> list[tuple[int, bytes]] | None:
    """Batches ``first .. stop-1`` from the replay socket (what it still buffers; ``stop``
    None: every batch from ``first`` on); None when no answer ends in time (the publisher may
    be gone: a replay's socket closes with it)."""

    from kvcore.live.wire import END_SEQ

    replay.send_multipart((b"", first.to_bytes(8, "big")))
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + (REPLAY_TIMEOUT_S if timeout_s is None else timeout_s)
    while (left := deadline - time.monotonic()) > 0:
        if not replay.poll(int(left * 1000)):
            break
        frames = replay.recv_multipart()
        if len(frames) != 4:
            continue
        _, _, seq_bytes, payload = frames
        if seq_bytes == END_SEQ:
            return got
        seq = int.from_bytes(seq_bytes, "big")
        if first <= seq and (stop is None or seq < stop):
            got.append((seq, payload))
    return None
