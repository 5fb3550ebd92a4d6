"""The roofline clock (`--gpu`) refuses the hybrid models whose work vLLM 0.33's perf.py does not
count (it has no Mamba or DeltaNet component, docs/clock-mla.md): one line naming the layers and
the clocks that can time them, exit 2, for Falcon-H1, Nemotron-H and Qwen3-Next."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

runner = CliRunner()
MAMBA = Path(__file__).resolve().parent / "data" / "mamba"
TAIL = ", which the roofline and calibrated clocks do not count; time it with --clock " \
       "linear:C0,C1,C2 or fixed:MS\n"


@pytest.mark.parametrize("config, says", [
    ("falcon-h1-7b", ("falcon_h1 has attention and Mamba2 side by side in every layer "
                      "(Falcon-H1)")),
    ("nemotron-nano-9b-v2", ("nemotron_h has feed-forward-only and mixer-only layers "
                             "(Nemotron-H)")),
    ("qwen3-next-80b-a3b", "qwen3_next has Gated DeltaNet layers"),
])
def test_the_roofline_clock_refuses_in_one_line(tmp_path, config, says) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 100, "output_length": 4, '
                     '"hash_ids": [1]}\n')
    r = runner.invoke(app, ["replay", str(trace), "--model-config",
                            str(MAMBA / f"{config}.config.json"), "--gpu", "h100-sxm",
                            "--num-blocks", "100", "--max-model-len", "8192"])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == f"error: option --model-config: {says}{TAIL}"
