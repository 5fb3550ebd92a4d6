"""`kvcli replay` with a model: the summary's `groups`, the table's groups / retention / blocks
rows (each only where it is true), and the warning that `--gpu` does not size the pool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

SAMPLE = Path(__file__).resolve().parents[1] / "traces" / "shared-prefix.jsonl"
runner = CliRunner()
FULL16 = {"type": "full_attention", "block_size": 16, "sliding_window": None}


def run(tmp_path, *args):
    # the first 8 requests: enough to run every model's groups, in a second
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(SAMPLE.read_text().splitlines(keepends=True)[:8]))
    res = runner.invoke(app, ["replay", str(trace), *args], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    return res


def summary(tmp_path, *args):
    return json.loads(run(tmp_path, *args, "--json").stdout)


def test_groups_key_without_a_model_is_one_full_group(tmp_path):
    d = summary(tmp_path)
    assert d["groups"] == [FULL16]
    assert "KV cache groups" not in run(tmp_path).stdout


def test_full_attention_model_has_no_retention_row(tmp_path):
    d = summary(tmp_path, "--model", "llama-3.1-8b", "--gpu-memory-gib", "80")
    assert d["groups"] == [FULL16]
    out = run(tmp_path, "--model", "llama-3.1-8b", "--gpu-memory-gib", "80").stdout
    assert "1 full_attention" in out
    # before: "0 (sliding windows keep reachable tails only)" for a model without windows
    assert "prefix cache retention" not in out and "sliding" not in out
    # dense retention is vLLM's too there, and changes nothing: said (it was accepted unsaid)
    dense = ("option prefix_cache_retention_interval dense has no effect: no sliding-window or "
             "Mamba KV cache group (full-attention and chunked-local groups cache every block "
             "already)")
    d2 = summary(tmp_path, "--model", "llama-3.1-8b", "--gpu-memory-gib", "80",
                 "--prefix-cache-retention-interval", "dense")
    assert dense in d2["warnings"] and d2["hit_tokens"] == d["hit_tokens"]
    d3 = summary(tmp_path, "--model", "gemma-3-27b", "--gpu-memory-gib", "80",
                 "--max-model-len", "8192", "--prefix-cache-retention-interval", "dense")
    assert dense not in d3["warnings"]


def test_sliding_model_counts_its_groups_and_shows_retention(tmp_path):
    d = summary(tmp_path, "--model", "gemma-3-27b", "--gpu-memory-gib", "80")
    slide = {"type": "sliding_window", "block_size": 16, "sliding_window": 1024}
    assert d["groups"] == [slide] * 6 + [FULL16]
    out = run(tmp_path, "--model", "gemma-3-27b", "--gpu-memory-gib", "80").stdout
    assert "6 sliding_window (1,024 tokens) + 1 full_attention" in out
    assert "0 (sliding windows keep reachable tails only)" in out


def test_blocks_row_shows_the_groups_page_size_not_the_flag(tmp_path):
    # Jamba's attention blocks grow to the mamba page (80 tokens): the summary keeps the flag's
    # block_size, the groups and the table say what the pool pages
    d = summary(tmp_path, "--model", "jamba-v0.1", "--gpu-memory-gib", "160")
    assert d["block_size"] == 16
    assert [g["type"] for g in d["groups"]] == ["mamba"] * 7 + ["full_attention"]
    assert {g["block_size"] for g in d["groups"]} == {80}
    out = run(tmp_path, "--model", "jamba-v0.1", "--gpu-memory-gib", "160").stdout
    assert f"{d['num_blocks']:,} x 80 tokens" in out and "x 16 tokens" not in out
    assert "7 mamba + 1 full_attention" in out
    # Mamba groups act on retention too (vLLM 0.33 caches only the states a hit can reach)
    assert "0 (Mamba keeps reachable states only)" in out


POOL_WARNING = "option gpu times the steps but does not size the KV pool"


@pytest.mark.parametrize("extra, warned", [
    ((), True),
    (("--num-blocks", "4096"), False),
    (("--gpu-memory-gib", "79"), False),
])
def test_gpu_with_a_model_warns_that_the_pool_is_not_sized_from_it(tmp_path, extra, warned):
    d = summary(tmp_path, "--model", "llama-3.1-8b", "--gpu", "h100", *extra)
    assert any(POOL_WARNING in w for w in d["warnings"]) is warned
    if warned:
        assert "default 16,384 blocks" in next(w for w in d["warnings"] if POOL_WARNING in w)


def test_gpu_pool_warning_honours_the_config_lines_num_blocks(tmp_path):
    trace = tmp_path / "c.jsonl"
    trace.write_text('{"config": {"num_blocks": 4096}}\n'
                     + "".join(SAMPLE.read_text().splitlines(keepends=True)[:4]))
    res = runner.invoke(app, ["replay", str(trace), "--model", "llama-3.1-8b", "--gpu", "h100",
                              "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["num_blocks"] == 4096
    assert not any(POOL_WARNING in w for w in d["warnings"])
