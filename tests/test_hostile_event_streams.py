"""Hostile event streams given to `kvcli stats`: a header's pool too large for the machine, an
`end` line whose summary is not an object. Each is one line `error: FILE:LINE: ...`, exit code
2, without a traceback (they raised numpy's MemoryError, AttributeError or TypeError)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_hostile_options import refused, runner

from kvcli.app import app

ROOT = Path(__file__).resolve().parents[1]
SP = str(ROOT / "traces" / "shared-prefix.jsonl")


@pytest.fixture(scope="module")
def stream(tmp_path_factory) -> list[dict]:
    path = tmp_path_factory.mktemp("ev") / "ev.jsonl"
    res = runner.invoke(app, ["replay", SP, "--num-blocks", "200", "--events", str(path)])
    assert res.exit_code == 0, res.output
    return [json.loads(x) for x in path.read_text().splitlines()]


def _write(tmp_path: Path, events: list[dict]) -> Path:
    path = tmp_path / "ev.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_a_header_pool_beyond_the_machine(tmp_path, stream, monkeypatch):
    from kvcore import host_memory

    monkeypatch.setattr(host_memory, "available_bytes", lambda: 8 << 30)
    path = _write(tmp_path, [dict(stream[0], num_blocks=10**12), *stream[1:]])
    refused(["stats", str(path)], f"error: {path}:1: field 'num_blocks': 1,000,000,000,000 "
            "blocks need ~52,154.1 GiB of host memory for stats' per-block state (56 bytes a "
            "block); this machine has 8.0 GiB available")
    path = _write(tmp_path, stream)       # the replay's own pool passes
    assert runner.invoke(app, ["stats", str(path), "--json"]).exit_code == 0


@pytest.mark.parametrize("summary, said", [
    (5, "'summary' must be an object, got 5"),
    ([1], "'summary' must be an object, got [1]"),
    ({"warnings": 5}, "'summary.warnings' must be a list of strings, got 5"),
    ({"warnings": "abc"}, "'summary.warnings' must be a list of strings, got 'abc'"),
])
def test_an_end_line_summary_that_is_not_one(tmp_path, stream, summary, said):
    path = _write(tmp_path, [*stream[:-1], dict(stream[-1], summary=summary)])
    field = "summary.warnings" if "warnings" in said else "summary"
    refused(["stats", str(path)],
            f"error: {path}:{len(stream)}: field '{field}': bad 'end' event: {said}")


# -- a header's groups or config of another shape raised AttributeError / TypeError before the
# -- first event; a block_size of true was taken as 1

@pytest.mark.parametrize("over, said", [
    ({"groups": "x"}, "field 'groups': must be a list of objects (one a KV cache group), got 'x'"),
    ({"groups": [5]}, "field 'groups': must be a list of objects (one a KV cache group), got [5]"),
    ({"groups": [{"type": 5}]}, "field 'groups': a group's type must be a string, got 5"),
    ({"groups": [{"type": "full_attention", "block_size": "x"}]},
     "field 'groups': a group's block_size must be a positive integer, got 'x'"),
    ({"config": 5}, "field 'config': must be an object, got 5"),
    ({"config": {"kv_offloading_size": 1, "offload_block_size": "x"}},
     "field 'config.offload_block_size': must be a positive integer, got 'x'"),
    ({"block_size": True}, "field 'block_size': missing or not a positive integer"),
])
def test_a_header_of_another_shape(tmp_path, stream, over, said):
    path = _write(tmp_path, [{**stream[0], **over}, *stream[1:]])
    refused(["stats", str(path)], f"error: {path}:1: {said}")
