"""Hostile options and inputs found by a robustness audit of config, gen, clock, script, sweep
and cluster: each is one line `error: ...` on stderr and exit code 2, without a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

ROOT = Path(__file__).resolve().parents[1]
MT = str(ROOT / "traces" / "multiturn-chat.jsonl")
runner = CliRunner()


def refused(args: list[str], start: str, *words: str) -> str:
    """Run kvcli; assert exit 2 and one stderr line starting with `start` and holding `words`."""
    res = runner.invoke(app, args)
    assert res.exit_code == 2, (res.exit_code, res.output, res.exception)
    assert "Traceback" not in res.stderr and res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith(start), lines[0]
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


# -- a CPU tier of 1e300 GiB overflowed when made bytes (OverflowError) --------------------------

@pytest.mark.parametrize("value", ["1e300", "inf", "2e6"])
def test_config_cpu_tier_is_bounded(value):
    refused(["config", "llama-3.1-8b", "--gpu-memory-gib", "80", "--kv-offloading-size", value],
            "error: option --kv-offloading-size: must be at most 1,048,576 GiB (1 PiB), got ")


def test_replay_cpu_tier_is_bounded():
    refused(["replay", MT, "--kv-offloading-size", "1e300"],
            "error: option --kv-offloading-size: must be at most 1,048,576 GiB (1 PiB), "
            "got 1e+300")
