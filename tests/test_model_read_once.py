"""A replay reads its model's config.json once: the start-up's sizing reads it and hands the
geometry on (`StartUp.geometry`) to the clock and the start-up warnings, which read it again
before (three times with the roofline clock and an MLA model's block-size note)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay
from kvcore.models import hf_config
from kvcore.models.presets import PRESETS

runner = CliRunner()


@pytest.mark.parametrize(("more", "clock"), [
    ({}, "linear"),
    # the roofline clock on the model; vLLM picks FLASHMLA's 64 there: the note says so
    ({"gpu": "h100", "kv_cache_dtype": "fp8"}, "roofline"),
])
def test_config_json_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  more: dict, clock: str) -> None:
    model = tmp_path / "config.json"
    model.write_text(json.dumps(PRESETS["deepseek-v2-lite"][1]))
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps({"timestamp": i, "input_length": 40, "output_length": 2})
                             + "\n" for i in range(3)))
    reads: list[str] = []
    real = hf_config.read_json

    def counted(path: str):
        reads.append(path)
        return real(path)

    monkeypatch.setattr(hf_config, "read_json", counted)
    opts = {"model_config": str(model), "num_blocks": 256, "max_model_len": 4096, **more}
    s = replay(str(trace), ReplayOptions(**opts, given=frozenset(opts)))
    assert reads == [str(model)]
    # the geometry handed on still says what the model needs said: its MLA block size
    assert sum("uses MLA" in w for w in s.warnings) == 1, s.warnings
    assert (s.to_dict().get("clock") or {"name": "linear"})["name"] == clock


# -- a cluster's every replica asked for the file again (its start-up sizes each replica's pool):
# -- 7 reads for 3 replicas behind 2 routers, and --model-config - found stdin empty the second
# -- time; now once a version of the file (`kvcore/models/config_file.py`, `kvcore/read_once.py`)

TINY = Path(__file__).resolve().parent / "data" / "calibration" / "tiny-llama.config.json"
TRACE = str(Path(__file__).resolve().parents[1] / "traces" / "shared-prefix.jsonl")


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the config.json reader reads, as it reads them."""
    seen: list[str] = []
    real = hf_config.read_json

    def counted(path: str):
        seen.append(path)
        return real(path)

    monkeypatch.setattr(hf_config, "read_json", counted)
    return seen


def test_a_cluster_reads_its_config_json_once(tmp_path: Path, reads: list[str]) -> None:
    model = tmp_path / "config.json"        # (a file of its own: read in no earlier test)
    model.write_bytes(TINY.read_bytes())
    r = runner.invoke(app, ["cluster", TRACE, "--replicas", "3", "--routers",
                            "round_robin,random", "--model-config", str(model), "--json"])
    assert r.exit_code == 0, r.output
    assert reads == [str(model)]


def test_a_config_json_on_stdin_runs_a_cluster(reads: list[str]) -> None:
    from kvcore.models.config_file import read_config_file

    read_config_file.forget("-")         # (stdin is read once a process)
    r = runner.invoke(app, ["cluster", TRACE, "--replicas", "3", "--model-config", "-",
                            "--json"], input=TINY.read_text())
    read_config_file.forget("-")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["config"]["model_config"] == "-" and reads == ["-"]


def test_a_bad_config_json_says_the_same_line_and_is_read_once(tmp_path: Path,
                                                               reads: list[str]) -> None:
    model = tmp_path / "config.json"
    model.write_text('{"model_type": "llama",\n "num_hidden_layers": 2\n')
    for _ in range(2):
        r = runner.invoke(app, ["cluster", TRACE, "--replicas", "3", "--model-config",
                                str(model)])
        assert r.exit_code == 2
        assert r.stderr == (f"error: {model}:3: not valid JSON: Expecting ',' delimiter\n")
    assert reads == [str(model)]
    # the same file rewritten is another version: read again
    model.write_bytes(TINY.read_bytes())
    r = runner.invoke(app, ["cluster", TRACE, "--replicas", "3", "--model-config", str(model),
                            "--json"])
    assert r.exit_code == 0, r.output
    assert reads == [str(model)] * 2
