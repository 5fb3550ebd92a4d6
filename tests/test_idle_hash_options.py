"""`--hash-seed` / `--hash-algo` change no hit and no step, only the hashes an event stream
shows (docs/replay.md): with no stream that shows them, a run with them was the same as one
without, unsaid."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kvcli.app import app

runner = CliRunner()
TRACE = str(Path(__file__).resolve().parents[1] / "traces" / "shared-prefix.jsonl")
SAID = ("option(s) hash_algo, hash_seed: no effect here: no event stream shows a block hash "
        "(they change no hit and no step)")


def _run(tmp_path, *args: str) -> tuple[dict, list[str]]:
    r = runner.invoke(app, ["replay", TRACE, "--num-blocks", "512", *args, "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    return doc, [w for w in doc["warnings"] if "hash" in w]


def test_hash_options_without_a_stream_that_shows_hashes_are_said(tmp_path):
    plain, _ = _run(tmp_path)
    seeded, said = _run(tmp_path, "--hash-algo", "xxhash", "--hash-seed", "7")
    assert said == [SAID]
    assert seeded["hit_tokens"] == plain["hit_tokens"] and seeded["steps"] == plain["steps"]
    _, said = _run(tmp_path, "--hash-seed", "7", "--events", str(tmp_path / "ev.jsonl"))
    assert said == []
    # a CPU tier's --steps lines list its jobs' chunk keys, the block hashes
    _, said = _run(tmp_path, "--hash-seed", "7", "--kv-offloading-size-chunks", "2000",
                   "--steps", str(tmp_path / "steps.jsonl"))
    assert said == []
    _, said = _run(tmp_path, "--hash-seed", "7", "--mode", "cache")
    assert said == [SAID.replace("option(s) hash_algo, hash_seed", "option(s) hash_seed")]
    r = runner.invoke(app, ["stats", TRACE, "--num-blocks", "512", "--hash-seed", "7"])
    assert r.exit_code == 0 and "hash_seed" not in r.stderr     # (its prefixes show hashes)
