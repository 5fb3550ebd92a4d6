"""DeepSeek-V4's five KV cache groups on one pool (sliding windows of 128 tokens in 64-token
blocks twice, the compressed caches' 256-token blocks, the compressor states' 8- and 4-token
blocks with windows 128 and 8; scheduler block 256, hash block 4), driven op by op: every op
script recorded from the real vLLM 0.33.0 KVCacheManager (tests/data/deepseek_v4/managers,
see its README) replays exactly through `kvcli script --model-config tiny-dsv4.config.json`'s
runner: block ids per op, block tables, free counts, hits (on the 256-token grid), KV events
(their `sliding_window_mla` kind included) and the summary. Before: kvcli refused to replay
the model, the managers over this pool unchecked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_ops import assert_same, expected_lines
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine.op_script import load_script
from kvcore.engine.script_model import with_model
from kvcore.engine.script_runner import run_ops

DATA = Path(__file__).resolve().parent / "data" / "deepseek_v4"
TINY = str(DATA / "tiny-dsv4.config.json")
CASES = sorted((DATA / "managers").glob("dsv4-*.ops.jsonl"))


def test_cases_recorded() -> None:
    assert len(CASES) == 12
    hits = {line["hit"] for p in CASES for line in expected_lines(p)
            if line["op"] == "new" and line.get("ok")}
    assert hits == {0, 256, 512, 768}       # (prefix hits land on the scheduler's block)


@pytest.mark.parametrize("ops_path", CASES, ids=lambda p: p.name.split(".")[0])
def test_vllms_manager_over_the_five_groups(ops_path: Path) -> None:
    cfg, ops = load_script(str(ops_path))
    cfg = with_model(cfg, model_config=TINY)
    assert [g.kv_cache_spec.block_size for g in cfg.specs or ()] == [64, 64, 256, 8, 4]
    assert_same(expected_lines(ops_path), list(run_ops(cfg, ops, str(ops_path))))


def test_through_the_cli() -> None:
    ops = CASES[0]
    r = CliRunner().invoke(app, ["script", str(ops), "--model-config", TINY])
    assert r.exit_code == 0, r.output
    got = [json.loads(line) for line in r.output.splitlines() if line.strip()]
    want = expected_lines(ops)
    assert [g.get("block_table") for g in got] == [w.get("block_table") for w in want]
    assert got[-1]["free_blocks"] == want[-1]["free_blocks"]


@pytest.mark.parametrize("mode", ["engine", "cache"])
def test_replay_runs_it(mode: str, tmp_path: Path) -> None:
    """A shared 256-token prefix: the second request hits it whole (the 256-token grid)."""
    trace = tmp_path / "t.jsonl"
    prefix = list(range(16))
    trace.write_text("".join(json.dumps(
        {"timestamp": i, "input_length": 320, "output_length": 4, "block_size": 16,
         "hash_ids": prefix + [100 + 10 * i + k for k in range(4)]}) + "\n" for i in range(2)))
    r = CliRunner().invoke(app, ["replay", str(trace), "--mode", mode, "--model-config", TINY,
                                 "--num-blocks", "4000", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)    # (engine mode warns of its uncalibrated clock on stderr)
    assert (d["prompt_tokens"], d["hit_tokens"]) == (640, 256)
