"""Mamba groups in "align" mode (prefix caching on) beside attention groups of other block sizes,
no drafts = vLLM 0.33.0's Scheduler and AsyncScheduler, step for step with their KV events.

The thirteen cases of tests/data/sched_mamba_mixed/ (README there: 100 generated, 200 runs, all
matched) were answered by the real schedulers through its oracle_mamba_mixed.py. What they need
(each rule taken out, in the 200 runs): the aligned split clips chunks to the Mamba block, which
is vLLM's ``cache_config.block_size``, not the groups' lcm (128 runs differ without it); its
checkpoint sits on the lcm and a chunk writing it from inside starts on the hash block (65); a
Mamba group finer than the lcm keys the prompt's last hash boundary as vLLM's
``_cache_partial_tail_block`` does (`FineMambaManager`, 4).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_sched import answer_of, check_run, config_of, mamba_request

from kvcore.engine.mamba_split import mamba_aligned_split
from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay
from kvcore.errors import InputError

DATA = Path(__file__).resolve().parent / "data" / "sched_mamba_mixed"
CASES = sorted(DATA.glob("*.trace.jsonl"), key=lambda p: int(p.name[2:-12]))
RUNS = [(t, asyn) for t in CASES for asyn in (False, True)]


def test_the_cases_are_all_there():
    assert [t.name[:-12] for t in CASES] == [
        "mm2", "mm3", "mm10", "mm13", "mm16", "mm20", "mm29", "mm36", "mm47", "mm58", "mm62",
        "mm65", "mm69"]


@pytest.mark.parametrize("trace, asyn", RUNS,
                         ids=[f"{t.name[:-12]}-{'async' if a else 'sync'}" for t, a in RUNS])
def test_mamba_mixed_case(trace: Path, asyn: bool):
    # (None: mm62 under async, vLLM's start-up check with two batches in flight)
    if (cfg := check_run(trace, asyn)) is not None:
        assert len({g.get("block_size", cfg["block_size"]) for g in cfg["groups"]}) >= 2


def test_the_split_clips_to_the_mamba_block_not_the_lcm():
    """mm20's r0 (76 tokens; Mamba at 32 beside full attention at 128): vLLM schedules 64 at
    step 2, the last Mamba boundary before the last token; the lcm as the block, all 76."""
    assert answer_of(DATA / "mm20.trace.jsonl")[2]["scheduled"] == {"r0": 64}
    r = mamba_request(76)
    assert mamba_aligned_split(r, 76, 0, 32, 128, grid=128) == 64
    assert mamba_aligned_split(r, 76, 0, 128, 128) == 76


def test_a_mamba2_checkpoint_sits_on_the_lcm():
    """mm47's r0 (35 tokens; Mamba2 at 16 beside full attention at 64 and 32): vLLM schedules 32
    at step 0. Its checkpoint sits on the lcm grid (64: position 0, none to write inside), so
    the chunk stops at the last Mamba boundary; on the Mamba block's grid the checkpoint at 32
    would be written inside and the chunk run whole (35)."""
    assert answer_of(DATA / "mm47.trace.jsonl")[0]["scheduled"] == {"r0": 32, "r1": 16}
    r = mamba_request(35)
    assert mamba_aligned_split(r, 35, 0, 16, 128, 1, grid=64, hash_block=16) == 32
    assert mamba_aligned_split(r, 35, 0, 16, 128, 1) == 35


def test_a_mamba_groups_own_block_size_is_refused_with_prefix_caching(tmp_path):
    """vLLM's align mode runs Mamba at the attention block size (its platform sets
    mamba_block_size to block_size): a config line's Mamba group at another is refused, one line
    naming the key."""
    cfg = config_of(DATA / "mm3.trace.jsonl")
    cfg["groups"] = [{"type": "mamba", "block_size": 16}, {"type": "full"}]
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"config": cfg}) + "\n" + json.dumps(
        {"id": "a", "prompt_token_ids": list(range(3, 40)), "output_length": 3}) + "\n")
    with pytest.raises(InputError) as e:
        replay(str(trace), ReplayOptions())
    assert (e.value.field, e.value.line) == ("config.groups", 1)
    assert e.value.message == ("a mamba group's block_size 16 is not the 8 vLLM runs it at "
                               "with prefix caching on (its align mode sets mamba_block_size "
                               "to block_size)")
