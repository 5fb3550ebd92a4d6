"""Values of another type that `kvcli stats` took without a word (the fuzzer's finds,
`test_stream_fuzz.py`), each now refused naming the file, the line and the field: a string
among `admit`'s `prompt_hashes` or `chain_hashes` (a miss of its own), a `counted` of "yes",
a hash of -1, a step of true (step 1), a `t_ms` of "x" inside a step (Python's words), a `req`
of 5, a `prompt_tokens` of 1.5, a tier job of true, a header's `trace` of 5."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from kvcli.app import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
TRACE = str(ROOT / "traces" / "multiturn-chat.jsonl")
HYBRID = str(ROOT / "tests" / "data" / "offload_hybrid" / "hy12.trace.jsonl")


def _replay(tmp_path_factory, *args: str) -> list[bytes]:
    path = tmp_path_factory.mktemp("ev") / "ev.jsonl"
    r = runner.invoke(app, ["replay", *args, "--events", str(path)])
    assert r.exit_code == 0, r.output
    return path.read_bytes().splitlines(keepends=True)


@pytest.fixture(scope="module")
def events(tmp_path_factory) -> list[bytes]:
    return _replay(tmp_path_factory, TRACE, "--num-blocks", "2048")


@pytest.fixture(scope="module")
def tier_events(tmp_path_factory) -> list[bytes]:
    return _replay(tmp_path_factory, HYBRID, "--arrivals", "step")


def refused(lines: list[bytes], tmp_path: Path, at: int, edit) -> str:
    """`kvcli stats` on the stream with line ``at`` (0-based) edited by ``edit``: exit 2,
    nothing on stdout, and the one line of stderr after its file."""
    ev = orjson.loads(lines[at])
    edit(ev)
    new = list(lines)
    new[at] = orjson.dumps(ev) + b"\n"
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(new))
    r = runner.invoke(app, ["stats", str(path), "--json"])
    assert (r.exit_code, r.stdout) == (2, ""), r.output
    assert r.stderr.startswith(f"error: {path}:{at + 1}: ") and r.stderr.count("\n") == 1
    return r.stderr[len(f"error: {path}:{at + 1}: "):-1]


def first(lines: list[bytes], kind: str, nth: int = 0) -> int:
    return [i for i, x in enumerate(lines) if orjson.loads(x).get("kind") == kind][nth]


def put(path: tuple, value):
    def edit(ev):
        for p in path[:-1]:
            ev = ev[p]
        ev[path[-1]] = value
    return edit


HASH = "not a block hash (an int from 0 to 2**64 - 1)"


@pytest.mark.parametrize("kind, path, value, said", [
    ("admit", ("prompt_hashes", 0, 1), "x",
     f"field 'prompt_hashes': bad 'admit' event: holds \"x\", {HASH}"),
    ("admit", ("chain_hashes",), [5, "x"],
     f"field 'chain_hashes': bad 'admit' event: holds \"x\", {HASH}"),
    ("admit", ("first_tokens", 0, 0), 1.5,
     "field 'first_tokens': bad 'admit' event: holds 1.5, not a token id (an int from 0 to 2**64 - 1)"),
    ("admit", ("first_tokens",), [],
     "field 'first_tokens': bad 'admit' event: holds 0 lists for the header's 1 KV cache groups"),
    ("admit", ("counted",), "yes",
     "field 'counted': bad 'admit' event: must be true or false, got \"yes\""),
    ("admit", ("resumed",), 0, "field 'resumed': bad 'admit' event: must be true or false, got 0"),
    ("cache", ("hashes", 0), -1, f"field 'hashes': bad 'cache' event: holds -1, {HASH}"),
    ("cache", ("hashes", 0), None, f"field 'hashes': bad 'cache' event: holds null, {HASH}"),
    ("allocate", ("blocks", 0), 1.5,
     "field 'blocks': bad 'allocate' event: 'blocks' holds 1.5, not a block id (0..2047)"),
    ("arrive", ("req",), 5, "field 'req': bad 'arrive' event: must be a string or null, got 5"),
    ("arrive", ("prompt_tokens",), 1.5,
     "field 'prompt_tokens': bad 'arrive' event: must be a whole number >= 0, got 1.5"),
    ("finish", ("output_tokens",), True,
     "field 'output_tokens': bad 'finish' event: must be a whole number >= 0, got true"),
    ("arrive", ("step",), True, "field 'step': not a step number: true"),
    ("end", ("summary",), None,
     "field 'summary': bad 'end' event: 'summary' must be an object, got None"),
])
def test_a_value_of_another_type_names_its_line_and_field(events, tmp_path, kind, path, value,
                                                           said):
    at = first(events, kind)
    assert refused(events, tmp_path, at, put(path, value)) == said


def test_a_time_of_another_type_inside_a_step(events, tmp_path):
    # (the step's first line gave the time; a later one's went into Python's arithmetic)
    at = next(i for i in range(2, len(events)) if orjson.loads(events[i])["step"]
              == orjson.loads(events[i - 1])["step"])
    assert refused(events, tmp_path, at, put(("t_ms",), "x")) == (
        f"field 't_ms': bad {orjson.loads(events[at])['kind']!r} event: must be a time in ms "
        "(a number >= 0), got \"x\"")


@pytest.mark.parametrize("kind, path, value, said", [
    ("offload_store", ("job",), True,
     "field 'job': bad 'offload_store' event: must be a whole number >= 0, got true"),
    ("offload_done", ("job",), 999, ("field 'job': bad 'offload_done' event: 999 is no job an "
                                     "offload_load or offload_store line created and no "
                                     "offload_done ended yet")),
    ("offload_store", ("gpu_blocks",), 1.5,
     "field 'gpu_blocks': bad 'offload_store' event: must be a whole number >= 0, got 1.5"),
    ("offload_evict", ("keys", 0), None,
     f"field 'keys': bad 'offload_evict' event: holds null, {HASH}"),
    ("offload_evict", ("groups", 0), None,
     "field 'groups': bad 'offload_evict' event: must hold whole numbers >= 0, holds null"),
])
def test_a_cpu_tier_value_of_another_type(tier_events, tmp_path, kind, path, value, said):
    assert refused(tier_events, tmp_path, first(tier_events, kind), put(path, value)) == said


@pytest.mark.parametrize("key, value, said", [
    ("trace", 5, "field 'trace': must be the trace's name (a string) or null, got 5"),
    ("mode", True, "field 'mode': must be \"engine\" or \"cache\", got true"),
    ("hash_block_size", "16", "field 'hash_block_size': must be a positive integer, got \"16\""),
    ("uncalibrated_clock", 1, "field 'uncalibrated_clock': must be true, false or null, got 1"),
    ("config", None, "field 'config': must be an object, got None"),
    ("config", {"arrivals": 5},
     "field 'config.arrivals': must be \"timestamp\" or \"ignore\" or \"step\", got 5"),
    ("config", {"kv_offloading_size": "no"},
     ("field 'config.kv_offloading_size': must be a size in GiB (a number >= 0) or null, "
      "got \"no\"")),
])
def test_a_header_value_the_report_shows(events, tmp_path, key, value, said):
    assert refused(events, tmp_path, 0, put((key,), value)) == said


def test_a_finish_missing_one_of_its_latencies(events, tmp_path):
    # (read as null, a request without that latency, it moved the distributions)
    def drop(ev):
        del ev["tpot_ms"]
    assert refused(events, tmp_path, first(events, "finish"), drop) == (
        "field 'tpot_ms': missing (a finish line holds all four latencies, null where they do "
        "not apply)")
