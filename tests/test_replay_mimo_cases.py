"""`replay --model-config` of a small MiMo-V2-Flash = vLLM 0.33's schedulers over the groups
vLLM's planner builds for it, step for step with their KV events.

tests/data/sched_mimo/mimo_small.json: 6 layers, full at 0 and 3 (4 KV heads), sliding over
48 tokens at 1, 2, 4, 5 (8 KV heads), keys 192 and values 128 wide: the full layers' page is
half the sliding ones', so vLLM's planner raises their block to 32 beside the sliding groups'
16. The answers come from tests/data/sched_mimo/make_mimo.py (the groups: vLLM's
`get_kv_cache_groups`) and ../sched_chunked_mixed/oracle_chunked_mixed.py (the README).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_sched import check_model_case, config_groups

DATA = Path(__file__).resolve().parent / "data" / "sched_mimo"
CASES = sorted(DATA.glob("*.trace.jsonl"))
MODEL = DATA / "mimo_small.json"


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_mimo_case(trace: Path, tmp_path: Path):
    check_model_case(trace, MODEL, tmp_path)


def test_the_groups():
    """The full group at block 32 first, then two sliding groups at 16."""
    sliding = {"type": "sliding_window", "block_size": 16, "sliding_window": 48}
    assert config_groups(MODEL, 256) == [{"type": "full", "block_size": 32}, sliding, sliding]


def test_cache_mode_runs_on_the_same_groups(tmp_path: Path):
    """`--mode cache` (one request at a time) over the same three groups, from the config."""
    from typer.testing import CliRunner

    from kvcli.app import app

    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps({"id": f"r{i}", "prompt_token_ids": list(range(
        100 + i)), "output_length": 4}) + "\n" for i in range(3)))
    r = CliRunner().invoke(app, ["replay", str(trace), "--mode", "cache", "--model-config",
                                 str(MODEL), "--num-blocks", "200", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    sliding = {"type": "sliding_window", "block_size": 16, "sliding_window": 48}
    assert d["groups"] == [{"type": "full_attention", "block_size": 32,
                            "sliding_window": None}, sliding, sliding]
    # (each later prompt extends the first: its three whole 32-token blocks hit, 96 each)
    assert (d["finished"], d["hit_tokens"]) == (3, 192)
