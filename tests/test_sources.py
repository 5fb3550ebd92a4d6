"""kvcore.sources: one opener for every input (gzip by its magic bytes, one wording per failure),
text decoded line by line so that bytes that are not UTF-8 name their line, and stdin peeked at
without being consumed."""

from __future__ import annotations

import gzip
import io
import sys

import pytest

from kvcore.analysis.events_reader import SNIFF_BUFFER_SIZE, is_event_stream
from kvcore.engine.op_script import load_script
from kvcore.errors import InputError
from kvcore.sources import close_source, open_source, read_text, text_lines
from kvcore.traces import read_trace

LINE = b'{"timestamp": 0, "input_length": 600, "output_length": 4, "hash_ids": [1, 2]}\n'


def test_gzip_is_recognised_by_its_magic_bytes_not_the_name(tmp_path):
    p = tmp_path / "trace.data"                       # no .gz suffix
    p.write_bytes(gzip.compress(LINE * 2))
    name, stream = open_source(str(p))
    assert name == str(p) and stream.peek(2)[:1] == b"{"
    close_source(stream)
    q = tmp_path / "plain.gz"                         # a .gz suffix on plain text
    q.write_bytes(LINE)
    assert len(read_trace(str(q)).requests) == 1


@pytest.mark.parametrize("make, wording", [
    (lambda d: d / "missing.jsonl", "no such file"),
    (lambda d: d, "is a directory, not a file"),
])
def test_one_wording_per_failure_in_every_reader(tmp_path, make, wording):
    path = str(make(tmp_path))
    for read in (read_trace, load_script, open_source):
        with pytest.raises(InputError) as err:
            read(path)
        assert str(err.value) == f"{path}: {wording}"


def test_a_line_that_is_not_utf8_is_named(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(LINE + LINE[:-2] + b"\xff}\n")
    with pytest.raises(InputError) as err:
        read_trace(str(p))
    assert (err.value.path, err.value.line) == (str(p), 2)
    assert "not UTF-8 text: byte 0xff at column" in str(err.value)
    ops = tmp_path / "ops.jsonl"
    ops.write_bytes(b'{"config": {}}\n{"op": "summary"}\n{"op": "\xfe"}\n')
    with pytest.raises(InputError, match=r"ops.jsonl:3: not UTF-8 text: byte 0xfe at column 9"):
        load_script(str(ops))


def test_text_helpers_number_lines_from_one():
    stream = io.BufferedReader(io.BytesIO(b"a\nb\n"))
    assert list(text_lines("x", stream)) == [(1, "a\n"), (2, "b\n")]
    with pytest.raises(InputError, match=r"^x:2: not UTF-8 text: byte 0xc3 at column 1$"):
        read_text("x", io.BufferedReader(io.BytesIO(b"ok\n\xc3(\n")))


def test_stdin_is_sniffed_without_being_consumed(monkeypatch):
    trace = gzip.compress(LINE * 3)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(trace)))
    name, stream = open_source("-", buffer_size=SNIFF_BUFFER_SIZE)
    assert name == "<stdin>" and not is_event_stream(name, stream)
    close_source(stream)
    assert not stream.closed
    assert len(read_trace("-").requests) == 3     # the trace reader gets every line


def test_vllm_events_are_refused_by_the_sniffer():
    stream = io.BufferedReader(io.BytesIO(b'{"ts": 1.0, "events": []}\n'))
    with pytest.raises(InputError, match=r"^ev:1: this is vLLM's KV event format"):
        is_event_stream("ev", stream)
    header = io.BufferedReader(io.BytesIO(b'{"kind":"header","schema_version":1}\n{}\n'))
    assert is_event_stream("ev", header) and header.readline().startswith(b'{"kind"')
