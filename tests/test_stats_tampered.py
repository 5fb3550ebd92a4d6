"""An edited event stream's impossible values are refused naming file, line and field (exit 2):
a string `ttft_ms` in a `finish` event ended in a TypeError's traceback, a negative one moved
the mean, a `hit_tokens` of 10^6 in a prompt of 1,066 gave a hit rate of 204%, and a string
`prompt_tokens` came out as Python's own words."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from kvcli.app import app

runner = CliRunner()
TRACE = str(Path(__file__).resolve().parents[1] / "traces" / "multiturn-chat.jsonl")


@pytest.fixture(scope="module")
def events(tmp_path_factory) -> list[bytes]:
    path = tmp_path_factory.mktemp("ev") / "ev.jsonl"
    r = runner.invoke(app, ["replay", TRACE, "--num-blocks", "2048", "--events", str(path)])
    assert r.exit_code == 0, r.output
    return path.read_bytes().splitlines(keepends=True)


def stats_with(events, tmp_path, kind, key, value):
    """`kvcli stats --json` on the stream with the first `kind` event's `key` set to `value`."""
    lines = list(events)
    at = next(i for i, line in enumerate(lines) if orjson.loads(line)["kind"] == kind)
    ev = orjson.loads(lines[at])
    ev[key] = value
    lines[at] = orjson.dumps(ev) + b"\n"
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(lines))
    return path, at, runner.invoke(app, ["stats", str(path), "--json"])


# The second group's words were Python's (event_fields.misfit): "list index out of range",
# "unsupported operand type(s) for +=: 'int' and 'str'", "'int' object has no attribute
# 'encode'", "unhashable type: 'list'", "object of type 'int' has no len()".
@pytest.mark.parametrize("kind, key, value, said", [
    ("finish", "ttft_ms", "x", "must be a finite number of ms >= 0 or null, got 'x'"),
    ("finish", "e2e_ms", -100, "must be a finite number of ms >= 0 or null, got -100"),
    ("admit", "hit_tokens", 1000000,
     "must be a token count from 0 to prompt_tokens 1066, got 1000000"),
    ("admit", "hit_tokens", -5, "must be a token count from 0 to prompt_tokens 1066, got -5"),
    ("admit", "prompt_tokens", "1066", "must be a token count, got '1066'"),
    ("cache", "hashes", [], "bad 'cache' event: 0 hashes for 66 blocks"),
    ("preempt", "num_computed_tokens", "x",
     'bad \'preempt\' event: must be a whole number >= 0, got "x"'),
    ("admit", "hash_domain", -1, "bad 'admit' event: must be a string or null, got -1"),
    ("arrive", "req", [], "bad 'arrive' event: must be a string or null, got []"),
    ("admit", "first_tokens", -1,
     "bad 'admit' event: must be a list (one list per group), got -1"),
    ("evict", "hashes", "x", 'bad \'evict\' event: must be a list of whole numbers, got "x"'),
    # (the report's simulated time: a TypeError's traceback once it was read)
    ("end", "t_ms", "x", 'bad \'end\' event: must be a time in ms (a number >= 0), got "x"'),
    ("end", "t_ms", -1.5, "bad 'end' event: must be a time in ms (a number >= 0), got -1.5"),
])
def test_an_impossible_value_names_its_line_and_field(events, tmp_path, kind, key, value, said):
    path, at, r = stats_with(events, tmp_path, kind, key, value)
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == f"error: {path}:{at + 1}: field '{key}': {said}\n"


def test_a_cpu_tier_events_count_of_the_wrong_shape_names_its_field(tmp_path):
    # `gpu_blocks` is a count: the schema first took it for a list of block ids, naming every
    # offload event's valid field and asking for the shape that then failed in Python's words
    ev = tmp_path / "ev.jsonl"
    r = runner.invoke(app, ["replay", TRACE, "--num-blocks", "512", "--kv-offloading-size", "4",
                            "--events", str(ev)])
    assert r.exit_code == 0, r.output
    lines = ev.read_bytes().splitlines(keepends=True)
    path, at, r = stats_with(lines, tmp_path, "offload_store", "gpu_blocks", "x")
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == (f"error: {path}:{at + 1}: field 'gpu_blocks': bad 'offload_store' "
                        'event: must be a whole number >= 0, got "x"\n')


@pytest.fixture(scope="module")
def hybrid_events(tmp_path_factory) -> list[bytes]:
    """A tier over three KV cache groups: its `offload_*` events carry `groups`."""
    path = tmp_path_factory.mktemp("ev") / "ev.jsonl"
    trace = Path(__file__).parent / "data" / "offload_hybrid" / "hy12.trace.jsonl"
    r = runner.invoke(app, ["replay", str(trace), "--arrivals", "step", "--events", str(path)])
    assert r.exit_code == 0, r.output
    return path.read_bytes().splitlines(keepends=True)


# (the first `offload_store` holds 5 keys, `offload_evict` 1, `offload_load` 3, of groups 0..2;
# a `groups` of null or none at all is a stream written before the tier named its groups)
@pytest.mark.parametrize("kind, value, said", [
    ("offload_store", "x", 'bad \'offload_store\' event: must be a list of whole numbers, got "x"'),
    ("offload_store", [True] * 5,
     "bad 'offload_store' event: must hold whole numbers >= 0, holds true"),
    ("offload_evict", [0, 0], "bad 'offload_evict' event: 2 groups for 1 keys"),
    ("offload_load", [0, 1, 3],
     "3 is not a KV cache group index of this stream (the header's groups: 0..2)"),
    ("offload_evict", None, ("missing: a stream of 3 KV cache groups names each key's group "
                             "(a stream of an older kvcli: replay it again)")),
])
def test_a_cpu_tier_keys_groups_are_checked(hybrid_events, tmp_path, kind, value, said):
    path, at, r = stats_with(hybrid_events, tmp_path, kind, "groups", value)
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == f"error: {path}:{at + 1}: field 'groups': {said}\n"
