"""The CPU tier's KV geometry keys (`num_layers`, `num_kv_heads`, `head_size`, `kv_dtype`) on a
trace's config line beside a model: the model's layers size the tier, so the line's keys do
nothing. As flags they are refused ("the model gives the KV geometry"); on the config line they
were dropped without a word. They are said, not refused: the oracle's CPU tier cases carry all
four on every config line (tests/data/offload_sizing), and refusing them would make such a
trace unreadable against a model unless edited; a config line's `groups` beside a model is
dropped and said the same way."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kvcli.app import app

ROOT = Path(__file__).resolve().parents[1]
ROWS = (ROOT / "traces" / "multiturn-chat.jsonl").read_text().splitlines()[:20]
ORACLE = ROOT / "tests" / "data" / "offload_sizing" / "gs66.trace.jsonl"
GEOMETRY = {"num_layers": 4, "num_kv_heads": 2, "head_size": 64, "kv_dtype": "float32"}
MODEL = ["--model", "llama-3.1-8b", "--num-blocks", "2000"]
runner = CliRunner()


def _trace(tmp_path: Path, name: str, config: dict) -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"config": config}) + "\n" + "\n".join(ROWS) + "\n")
    return str(path)


def _replay(*args: str) -> dict:
    r = runner.invoke(app, ["replay", *args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _said(path: str) -> str:
    return (f"option(s) head_size, kv_dtype, num_kv_heads, num_layers (the trace's config line, "
            f"{path}:1): no effect with a model (llama-3.1-8b): its layers give the CPU tier's "
            "KV geometry (bytes per block)")


def test_a_config_lines_geometry_beside_a_model_and_a_tier_is_said_and_changes_nothing(
        tmp_path):
    lined = _trace(tmp_path, "lined.jsonl", {"kv_offloading_size": 1, **GEOMETRY})
    plain = _trace(tmp_path, "plain.jsonl", {"kv_offloading_size": 1})
    by_line, alone = _replay(lined, *MODEL), _replay(plain, *MODEL)
    assert [w for w in by_line["warnings"] if "KV geometry" in w] == [_said(lined)]
    assert not [w for w in alone["warnings"] if "KV geometry" in w]
    assert by_line["offload"] == alone["offload"] and by_line["config"] == alone["config"]
    # without a model the line's geometry sizes the tier: nothing to say
    assert not [w for w in _replay(lined, "--num-blocks", "2000")["warnings"]
                if "geometry" in w or "config line" in w]


def test_the_same_geometry_as_a_flag_beside_a_model_is_refused(tmp_path):
    plain = _trace(tmp_path, "plain.jsonl", {"kv_offloading_size": 1})
    r = runner.invoke(app, ["replay", plain, *MODEL, "--num-layers", "4"])
    assert (r.exit_code, r.stderr) == (
        2, "error: option --num-layers: the model gives the KV geometry; leave this out\n")


def test_an_oracle_tier_case_replays_against_a_model_with_its_geometry_said():
    said = _replay(str(ORACLE), "--model", "llama-3.1-8b")["warnings"]
    assert _said(str(ORACLE)) in said
