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


def test_a_story_and_a_routers_index_show_no_hash(tmp_path):
    # --explain's story shows no block hash: the hash options change nothing there, and the
    # note that vLLM seeds xxhash at random (for streams a server's would be compared with)
    # has no hash to be about
    r = runner.invoke(app, ["replay", TRACE, "--num-blocks", "512", "--explain", "3",
                            "--hash-algo", "xxhash", "--json"])
    assert r.exit_code == 0, r.output
    said = [w for w in json.loads(r.stdout)["warnings"] if "hash" in w]
    assert said == [SAID.replace("hash_algo, hash_seed", "hash_algo")]
    # a prefix-aware router reads its replicas' vLLM events, but no person sees their hashes
    cluster = ["cluster", TRACE, "--num-blocks", "256", "--replicas", "2",
               "--router", "llmd_precise", "--hash-algo", "xxhash", "--json"]
    r = runner.invoke(app, cluster)
    assert r.exit_code == 0, r.output
    said = [w for w in json.loads(r.stdout)["warnings"] if "hash" in w]
    assert said == [SAID.replace("hash_algo, hash_seed", "hash_algo")]
    # with the replicas' streams written, the note about vLLM's seed is said instead
    r = runner.invoke(app, [*cluster, "--events", str(tmp_path / "ev")])
    assert r.exit_code == 0, r.output
    said = [w for w in json.loads(r.stdout)["warnings"] if "hash" in w]
    assert len(said) == 1 and said[0].startswith("event hashes: vLLM seeds xxhash at random")


def test_a_config_lines_hash_keys_in_either_spelling_are_said_as_the_flags(tmp_path):
    # (only the flags were seen: a config line's hash_algo / hash_seed, in whatever spelling,
    # ran the same as without them, unsaid)
    with open(TRACE) as f:
        head = "".join(line for _, line in zip(range(20), f))
    lined = tmp_path / "t.jsonl"
    lined.write_text('{"config": {"prefix_caching_hash_algo": "xxhash", "hash_seed": "7"}}\n'
                     + head)
    r = runner.invoke(app, ["replay", str(lined), "--num-blocks", "512", "--json"])
    assert r.exit_code == 0, r.output
    assert [w for w in json.loads(r.stdout)["warnings"] if "hash" in w] == [
        (f"option(s) prefix_caching_hash_algo, hash_seed (the trace's config line, {lined}:1): "
         "no effect here: no event stream shows a block hash (they change no hit and no step)")]
    # a flag beside them is named apart; with a stream that shows hashes nothing is said
    r = runner.invoke(app, ["replay", str(lined), "--num-blocks", "512", "--hash-seed", "8",
                            "--json"])
    assert [w for w in json.loads(r.stdout)["warnings"] if "hash" in w] == [
        (f"option(s) hash_seed; prefix_caching_hash_algo (the trace's config line, {lined}:1): "
         "no effect here: no event stream shows a block hash (they change no hit and no step)")]
    r = runner.invoke(app, ["replay", str(lined), "--num-blocks", "512", "--events",
                            str(tmp_path / "ev.jsonl"), "--json"])
    assert r.exit_code == 0 and not [w for w in json.loads(r.stdout)["warnings"]
                                     if "no effect" in w]
