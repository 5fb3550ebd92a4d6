"""A trace too long to hold: what one reading learns of it (`Survey`), then its requests read
again from the file, one at a time, in arrival order (`TraceStream`).

`read_trace(path, keep=K)` reads the whole file once in any case (every line checked, so bad
input is still an error before a replay starts); past K requests it stops keeping them and
keeps only the survey: counts and sums the replay needs up front (the warm-up's cut, the
summary's totals, the LoRA ids in order of first appearance), the ids' 64-bit hashes for the
duplicate check, and, only when the file is not in arrival order, each request's arrival time
and step, from which the order is sorted. A replay then holds a window of requests, not the
trace: about 0.9 KB a Mooncake request read whole (its object, its hash ids) against 8 to 24
bytes here.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterator
from typing import TYPE_CHECKING

import xxhash

from kvcore.errors import InputError

if TYPE_CHECKING:
    from kvcore.traces.reader import Trace
    from kvcore.traces.request import TraceRequest


class Survey:
    """What one reading of a trace keeps (see the module docstring)."""

    __slots__ = (
        "arrivals",
        "count",
        "first_arrival",
        "id_hashes",
        "last_arrival",
        "last_line",
        "lora_names",
        "max_prompt",
        "max_total",
        "out_of_order",
        "output_tokens",
        "prompt_tokens",
        "steps",
        "steps_out_of_order",
    )

    def __init__(self) -> None:
        self.count = 0
        self.last_line = 0
        self.prompt_tokens = self.output_tokens = 0
        self.max_total = 0
        self.max_prompt = 0
        self.out_of_order = 0           # requests earlier than one on a line before them
        self.steps_out_of_order = False
        self.first_arrival = self.last_arrival = 0.0
        self.lora_names: dict[str, None] = {}
        self.arrivals = array("d")      # each request's, in file order
        self.steps = array("q")         # each request's arrival step, in file order
        self.id_hashes: array | None = None    # each id's xxh3-64, once the requests go

    def add(self, r: TraceRequest) -> None:
        if self.count:
            if r.arrival_ms < self.last_arrival:
                self.out_of_order += 1
            else:
                self.last_arrival = r.arrival_ms
            if r.arrival_step < self.steps[-1]:
                self.steps_out_of_order = True
            self.first_arrival = min(self.first_arrival, r.arrival_ms)
        else:
            self.first_arrival = self.last_arrival = r.arrival_ms
        self.count += 1
        self.last_line = r.line
        self.prompt_tokens += r.prompt_len
        self.output_tokens += r.output_len
        self.max_total = max(self.max_total, r.prompt_len + r.output_len)
        self.max_prompt = max(self.max_prompt, r.prompt_len)
        if r.lora is not None:
            self.lora_names.setdefault(r.lora)
        self.arrivals.append(r.arrival_ms)
        self.steps.append(r.arrival_step)
        if self.id_hashes is not None:
            self.id_hashes.append(_id_hash(r.id))

    def hash_ids(self, kept: list[TraceRequest]) -> None:
        """From now on the ids are checked by their hashes: those of the requests so far."""
        self.id_hashes = array("Q", (_id_hash(r.id) for r in kept))

    def id_collision(self) -> bool:
        """Whether two ids share a hash (a duplicate id, or very rarely a collision)."""
        import numpy as np  # (here: a replay of a trace held whole never pays its import)

        h = np.frombuffer(self.id_hashes, dtype=np.uint64)     # type: ignore[arg-type]
        h = np.sort(h)
        return bool(np.any(h[1:] == h[:-1]))

    def fill(self, trace: Trace) -> None:
        """The trace's totals (`Trace`'s survey fields)."""
        trace.out_of_order = self.out_of_order
        trace.prompt_tokens = self.prompt_tokens
        trace.output_tokens = self.output_tokens
        trace.first_arrival_ms = self.first_arrival
        trace.last_arrival_ms = self.last_arrival
        trace.max_total_tokens = self.max_total
        trace.max_prompt_tokens = self.max_prompt
        trace.lora_names = list(self.lora_names)


class TraceStream:
    """A trace's requests read again from its file, in arrival order (timestamp, ties in file
    order), or with `by_step` in (arrival step, file order): a sequence that can be counted
    and iterated (each iteration reads the file), not indexed. A file changed since it was
    read is an `InputError`."""

    __slots__ = ("order", "path", "size", "stat", "survey")

    def __init__(self, path: str, survey: Survey, by_step: bool = False) -> None:
        self.path = path
        self.survey = survey
        self.size = survey.count
        st = os.stat(path)
        self.stat = (st.st_size, st.st_mtime_ns)
        # The file positions in replay order (None: file order). Only an unordered file keeps
        # its arrival times and steps.
        self.order: array | None = None
        if by_step and survey.steps_out_of_order:
            self.order = _stable_order(survey.steps)
        elif not by_step and survey.out_of_order:
            self.order = _stable_order(survey.arrivals)
        if not (survey.out_of_order or survey.steps_out_of_order):
            survey.arrivals = array("d")
            survey.steps = array("q")

    def by_step(self) -> TraceStream:
        """The same requests in (arrival step, file order): `--arrivals step`'s order."""
        return TraceStream(self.path, self.survey, by_step=True)

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[TraceRequest]:
        from kvcore.traces.reader import file_requests

        try:
            st = os.stat(self.path)
        except OSError:         # (removed since: FileNotFoundError's traceback)
            raise self._changed() from None
        if (st.st_size, st.st_mtime_ns) != self.stat:
            raise self._changed()
        requests = self._reread(file_requests(self.path))
        if self.order is None:
            n = 0
            for r in requests:
                n += 1
                if n > self.size:
                    raise self._changed()
                yield r
            if n != self.size:
                raise self._changed()
            return
        # Requests read before their turn wait here (as many as the file is out of order).
        early: dict[int, TraceRequest] = {}
        for want in self.order:
            while want not in early:
                got = next(requests, None)
                if got is None:
                    raise self._changed()
                early[got.index] = got
            yield early.pop(want)

    def _reread(self, requests: Iterator[TraceRequest]) -> Iterator[TraceRequest]:
        """`requests`, a line the first reading passed and this one refuses being the file's
        change (it was worded as a plain bad line: `t.jsonl:1005: malformed JSON`, a line
        that was whole when checked)."""
        try:
            yield from requests
        except InputError as err:
            what = (f"field '{err.field}': " if err.field else "") + err.message
            raise self._changed(f": {what}", err.line) from None

    def _changed(self, now: str = "", line: int | None = None) -> InputError:
        return InputError("the trace changed while it was replayed (it is read twice: once "
                          f"to check it, then request by request){now}", path=self.path,
                          line=line)


def _stable_order(keys: array) -> array:
    """The positions of `keys` (an array of "d" or "q") in ascending order, ties in position
    order."""
    import numpy as np

    order = array("q")
    values = np.frombuffer(keys, dtype=np.float64 if keys.typecode == "d" else np.int64)
    order.frombytes(np.argsort(values, kind="stable").astype(np.int64).tobytes())
    return order


def _id_hash(rid: str) -> int:
    return xxhash.xxh3_64_intdigest(rid.encode("utf-8", "surrogatepass"))
