"""The hostile campaigns' findings, each the one edit of a tests/data config that shows it
(tests/test_hostile_campaign7.py to 11): the edits, the mutated file, the line kvcli must say,
and the two checks every campaign makes of a finding (`kvcli config` and `kvcli replay` refuse it
in that one line, exit code 2)."""

from __future__ import annotations

import json
from pathlib import Path

from test_hostile_options import refused, runner

from kvcli.app import app

DATA = Path(__file__).resolve().parent / "data"
# (memory enough that only the edit can refuse the config)
POOL = ["--gpu-memory-gib", "2048", "--max-model-len", "4096"]


def mutated(tmp_path: Path, base: str, edit) -> str:
    """``base`` (under tests/data) as config.json in `tmp_path`, after ``edit(cfg)``."""
    cfg = json.loads((DATA / base).read_text())
    edit(cfg)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return str(path)


def say(path: str, field: str, message: str) -> str:
    return f"error: {path}: field '{field}': {message}"


def top(key: str, value):
    """An edit setting the config's top-level `key` to `value`."""
    def edit(cfg):
        cfg[key] = value
    return edit


def at(*path, value):
    """An edit setting the key at `path` (nested objects) to `value`."""
    def edit(cfg):
        for k in path[:-1]:
            cfg = cfg[k]
        cfg[path[-1]] = value
    return edit


def config_refuses(tmp_path: Path, base: str, edit, field: str, message: str) -> None:
    """`kvcli config` refuses the edited config in exactly the one line `say` gives."""
    path = mutated(tmp_path, base, edit)
    line = refused(["config", "--model-config", path, *POOL], say(path, field, message))
    assert line == say(path, field, message)


def replay_refuses(tmp_path: Path, base: str, edit, field: str, message: str) -> None:
    """`kvcli replay` refuses it the same, before a step."""
    path = mutated(tmp_path, base, edit)
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0.0, "input_length": 40, "output_length": 4}\n')
    refused(["replay", str(trace), "--model-config", path, "--num-blocks", "4000"],
            say(path, field, message))


def sized_report(path: str) -> dict:
    """`kvcli config --json`'s blocks and memory for the config at `path` (its name left out)."""
    res = runner.invoke(app, ["config", "--model-config", path, *POOL, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout.replace(path, "F"))
    return {k: out[k] for k in ("num_blocks", "memory")}


def sized_the_same(tmp_path: Path, base: str, edit, twin) -> None:
    """`base` after `edit` sizes exactly as after `twin` (a value read as vLLM reads it)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert sized_report(mutated(tmp_path / "a", base, edit)) == sized_report(
        mutated(tmp_path / "b", base, twin))
