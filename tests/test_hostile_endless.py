"""Inputs that never end, found by an adversarial pass: /dev/zero (or /dev/full, /dev/urandom)
given as a trace, a script, a config.json or a results file was read until the machine ran out
of memory (`kvcli sweep --results /dev/full`: 10 GB in 12 s); a stream of zeros on stdin grew
one line without bound. Each is now one line on stderr and exit code 2."""

from __future__ import annotations

import os

import pytest
from test_hostile_options import refused, runner

import kvcore.sources
from kvcli.app import app

SP = os.path.join(os.path.dirname(__file__), "..", "traces", "shared-prefix.jsonl")
LONG_LINE = ("a line longer than 100 bytes: no kvcli input has a line this long (a request holds "
             "at most 10,000,000 tokens)")
DEVICE = ("is a device, not a file (of devices only /dev/null and a terminal are read; - reads "
          "stdin)")


@pytest.mark.parametrize("args", [
    ["replay", "/dev/zero"], ["stats", "/dev/zero"], ["curve", "/dev/zero"],
    ["cluster", "/dev/urandom"], ["script", "/dev/zero"], ["bench", "--ops", "/dev/zero"],
    ["config", "--model-config", "/dev/zero", "--gpu-memory-gib", "80"],
    ["sweep", "report", "/dev/zero"]])
def test_an_endless_device_is_refused(args):
    refused(args, f"error: {args[-1] if args[-1] != '80' else '/dev/zero'}: {DEVICE}")


def test_a_results_file_on_an_endless_device(tmp_path):
    # the sweep reads its results file first (to resume): /dev/full reads as zeros forever
    refused(["sweep", "--trace", SP, "--set", "num_blocks=100,200", "--results", "/dev/full"],
            f"error: /dev/full: {DEVICE}")


def test_dev_null_still_reads_as_empty():
    refused(["replay", "/dev/null"], "error: /dev/null:1: empty trace: no requests")


def test_a_line_past_the_bound_is_refused(monkeypatch):
    # (the bound is 256 MiB; a small one here so that the test reads little)
    monkeypatch.setattr(kvcore.sources, "MAX_LINE_BYTES", 100)
    line = '{"input_length": 10, "output_length": 5}'
    res = runner.invoke(app, ["replay", "-"], input=line + "\n" + "0" * 500)
    assert res.exit_code == 2 and res.stdout == "", res.output
    assert res.stderr == f"error: <stdin>:2: {LONG_LINE}\n"
    # a line of the bound, newline included, reads (here: malformed JSON, not a length refusal)
    res = runner.invoke(app, ["replay", "-"], input=line + "\n" + "0" * 99 + "\n")
    assert res.exit_code == 2 and "longer than" not in res.stderr, res.stderr


def test_an_input_read_whole_past_the_bound_is_refused(monkeypatch, tmp_path):
    # an op script, a config.json or a sweep spec from an endless pipe was read until memory ran
    # out (the bound is 1 GiB; a small one here)
    monkeypatch.setattr(kvcore.sources, "MAX_WHOLE_BYTES", 100)
    res = runner.invoke(app, ["script", "-"], input="\n" * 101)
    assert res.exit_code == 2 and res.stdout == "", res.output
    assert res.stderr == ("error: <stdin>: more than 100 bytes: no input read whole is that "
                          "large (an endless stream?)\n")
    cfg = tmp_path / "c.json"
    cfg.write_text("{" + " " * 200 + "}")
    res = runner.invoke(app, ["config", "--model-config", str(cfg)])
    assert res.exit_code == 2 and "more than 100 bytes" in res.stderr, res.output


def test_stats_and_sweep_results_read_lines_within_the_bound(monkeypatch, tmp_path):
    # an event stream's lines and a results file were read whatever their length: a header
    # then 3 GB of zeros took 3.3 GB before a MemoryError's traceback; `sweep report` read a
    # 4 GB gzip bomb (18 MB) whole
    events = tmp_path / "ev.jsonl"
    r = runner.invoke(app, ["replay", SP, "--num-blocks", "512", "--events", str(events)])
    assert r.exit_code == 0, r.output
    header = events.read_bytes().split(b"\n", 1)[0]
    # (an event stream's bound is its own: an `admit` line at block size 1 is 28 bytes a token)
    from kvcore.analysis import events_reader
    monkeypatch.setattr(events_reader, "MAX_EVENT_LINE_BYTES", len(header) + 100)
    endless = tmp_path / "endless.jsonl"
    endless.write_bytes(header + b"\n" + b"0" * (len(header) + 200))
    refused(["stats", str(endless)],
            f"error: {endless}:2: {LONG_LINE.replace('100', f'{len(header) + 100:,}')}")
    monkeypatch.setattr(kvcore.sources, "MAX_LINE_BYTES", 100)
    # the trace's bound is not the stream's (kvcli's own stream of a 10M-token request at block
    # size 1 has a 283 MB `admit` line: refused by the 256 MiB bound)
    monkeypatch.setattr(events_reader, "MAX_EVENT_LINE_BYTES", 1 << 20)
    assert runner.invoke(app, ["stats", str(events)]).exit_code == 0
    results = tmp_path / "results.jsonl"
    results.write_bytes(b"0" * 500)
    refused(["sweep", "report", str(results)], f"error: {results}:1: {LONG_LINE}")


def test_curve_leaves_a_file_past_the_bound_to_the_line_reader(monkeypatch, tmp_path):
    # the whole-file fast path read a 4 GB stream of zeros (18 MB gzipped) until memory ran
    # out; past the bound it now leaves the file to the line reader, with the same answer
    from kvcore.analysis.curve import fastread, reading
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(
        f'{{"timestamp": {i}, "input_length": 1024, "output_length": 8, "hash_ids": [{i % 3}, '
        f'{i}]}}\n' for i in range(40)))
    want = runner.invoke(app, ["curve", str(trace), "--json"])
    assert want.exit_code == 0, want.output
    seen = []
    monkeypatch.setattr(fastread, "MAX_LINE_BYTES", 200)
    real = fastread.read_hash_id_trace
    monkeypatch.setattr(reading, "read_hash_id_trace", lambda p: seen.append(r := real(p)) or r)
    got = runner.invoke(app, ["curve", str(trace), "--json"])
    assert seen == [None] and got.stdout == want.stdout
    monkeypatch.setattr(kvcore.sources, "MAX_LINE_BYTES", 100)
    endless = tmp_path / "zeros.jsonl"
    endless.write_bytes(b"0" * 500)
    refused(["curve", str(endless)], f"error: {endless}:1: {LONG_LINE}")


def test_a_line_memory_cannot_hold_is_not_called_malformed(monkeypatch, tmp_path):
    # under a memory limit orjson fails with "Not enough memory to allocate buffer": the line
    # (valid JSON of 25 MB, 3,000,000 hash ids, under `ulimit -v 400000`) was "malformed JSON"
    import types

    import orjson

    from kvcore.traces import reader

    def loads(text):
        raise orjson.JSONDecodeError("Not enough memory to allocate buffer for parsing", "", 0)

    monkeypatch.setattr(reader, "orjson", types.SimpleNamespace(
        loads=loads, JSONDecodeError=orjson.JSONDecodeError))
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"input_length": 10, "output_length": 5}\n')
    refused(["replay", str(trace)],
            f"error: {trace}:1: not enough memory to parse this line (40 characters)")
