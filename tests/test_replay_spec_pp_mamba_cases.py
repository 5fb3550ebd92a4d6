"""Speculative decoding with pipeline parallelism over Mamba groups (Qwen3-Next or Qwen3.5 with
MTP under PP, Nemotron-H or Jamba with n-gram or EAGLE-3 drafts) = vLLM 0.33's schedulers behind
`EngineCore`'s batch queue, step for step with their KV events (tests/data/sched_spec_pp_mamba/:
oracle_spec_pp_mamba.py's answers, 121 of 121 random cases vLLM ran matched, 9 it refused to
start refused alike). No rule was added for the combination: the sync-PP draft hand-back and
the K speculative state blocks a Mamba group keeps, each recorded apart, meet here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_sched import answer_of, check_spec_case, config_of, replay_recorded
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError

DATA = Path(__file__).resolve().parent / "data" / "sched_spec_pp_mamba"
CASES = sorted(DATA.glob("*.trace.jsonl"))
RAN = [t for t in CASES if "error" not in answer_of(t)[0]]


def expected_of(trace: Path) -> list[dict]:
    # (mtp's target is the oracle's tiny DeepSeek-V3, but the groups are the config line's:
    # its full-attention group's events say `full_attention` already; read as sched_spec_pp's)
    return json.loads(json.dumps(answer_of(trace)).replace('"mla_attention"',
                                                           '"full_attention"'))


@pytest.mark.parametrize("trace", RAN, ids=lambda p: p.name[:-12])
def test_spec_pp_mamba_case(trace: Path):
    got = check_spec_case(trace, expected_of(trace))
    cfg = config_of(trace)
    assert got[0].config["pipeline_parallel_size"] == cfg["pipeline_parallel_size"]
    summary = answer_of(trace)[-1]["summary"]
    assert summary["max_concurrent_batches"] == (cfg["pipeline_parallel_size"]
                                                 + cfg["async_scheduling"])
    assert sum(e["schedule_called"] for e in got[1]) == summary["totals"]["steps"]
    assert sum(e["processed"] is not None for e in got[1]) == summary["totals"]["updates"]


def test_the_cases_are_all_there():
    assert [t.name.split(".")[0] for t in CASES] == [
        "ppm317", "ppm331", "ppm336", "ppm344", "ppm355", "ppm360", "ppm393", "ppm405",
        "ppm408", "ppm428", "ppmtp361", "ppmtp362", "ppmtp419", "ppmtp424"]


def test_a_pool_one_block_short_is_refused_as_vllm_refuses_it():
    """ppm331: eagle3 at PP 2 (sync), two Mamba1 groups in "none" mode with K = 2 (1 + 2
    blocks each) and 384 tokens of 32-token blocks (12): 18 blocks, 17 usable. A queue of 2
    raises no Mamba or full-attention group's count, so the message names no batches in
    flight."""
    trace = DATA / "ppm331.trace.jsonl"
    assert answer_of(trace)[0]["error"].endswith("needs 18 blocks, 17 usable")
    with pytest.raises(InputError) as err:
        replay_recorded(trace)
    assert err.value.message == (
        "one request of max_model_len 384 tokens needs 18 blocks (3 mamba + 3 mamba + 12 "
        "full_attention) but only 17 are usable (num_blocks 18): vLLM refuses to start")


def test_the_refusal_of_drafts_with_pp_over_mamba_groups_is_lifted():
    """sm4 (sched_spec_mamba: ngram K = 3, async, a Mamba2 group in "none" mode) at PP 2 runs:
    a batch queue of 3."""
    trace = str(DATA.parent / "sched_spec_mamba" / "sm4.trace.jsonl")
    r = CliRunner().invoke(app, ["replay", trace, "--json", "--arrivals", "step",
                                 "--pipeline-parallel-size", "2"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["config"]["pipeline_parallel_size"] == 2
