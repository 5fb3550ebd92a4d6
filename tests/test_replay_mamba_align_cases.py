"""Mamba groups whose prefill checkpoint alignment is not 1 = vLLM 0.33.0's Scheduler.

A Gated DeltaNet layer (Qwen3-Next) on FlashInfer's kernel declares
``prefill_checkpoint_alignment`` its checkpoint grid (the Mamba block, or lcm(unit, 64) with a
``prefix_match_unit``): the worker writes a checkpoint from inside a chunk only at a multiple of
it from the chunk's start (vLLM's ``is_mamba_prefill_checkpoint_valid``), which the Scheduler
checks with the first Mamba group's alignment and each MambaManager with its own. A config line
says it with ``{"type": "mamba", "checkpoint": true, "checkpoint_alignment": N}``.
tests/data/sched_mamba_align/ holds five random cases (`make_random.py --align`) with the real
Scheduler's and AsyncScheduler's answers (README there: 440 runs drawn, all matched; with the
alignment read as 1, 100 of them differ, these five among them).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_sched import answer_of, assert_matches, config_of, mamba_request, replay_case
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine.mamba_split import mamba_aligned_split

DATA = Path(__file__).resolve().parent / "data" / "sched_mamba_align"
CASES = sorted(DATA.glob("*.trace.jsonl"))


def test_the_cases_are_all_there():
    assert [t.name.split(".")[0] for t in CASES] == [
        "am2seed1", "am2seed13", "am2seed27", "am2seed34", "am2seed52"]
    aligns = {t.name.split(".")[0]: [g["checkpoint_alignment"] for g in config_of(t)["groups"]
                                     if g["type"] == "mamba"] for t in CASES}
    assert aligns == {"am2seed1": [64], "am2seed13": [64, 64, 64], "am2seed27": [16, 1, 256],
                      "am2seed34": [640], "am2seed52": [128]}


@pytest.mark.parametrize("align, n", [(1, 380), (16, 380), (64, 320), (128, 320), (368, 380)])
def test_the_alignment_decides_whether_the_last_chunk_holds_the_checkpoint(align, n):
    """A 700-token prompt at 320 of it, blocks of 320, unit 16 (am2seed1's geometry): the
    checkpoint is at 688, 368 tokens past the chunk's start. At an alignment dividing 368 the
    chunk runs to the prompt's end and writes it from inside; else it stops at the block
    boundary, 640."""
    r = mamba_request(700, 320)
    assert mamba_aligned_split(r, 380, 320, 320, 1024, align, 16) == n


def test_an_alignment_of_two_blocks_splits_a_resumed_prefill():
    """am2seed34 (block 320, alignment 640, no unit), step 50: r3 (811 prompt tokens) resumes
    at 320; its checkpoint at 640 is one block, not two, past the start: vLLM schedules 320
    (kvcli with alignment 1 would run 491 and keep 2 blocks fewer free)."""
    t = DATA / "am2seed34.trace.jsonl"
    _, ours, _, _ = replay_case(t, async_scheduling=False)
    step = next(e for e in ours if e["step"] == 50)
    assert (step["scheduled"], step["num_free_blocks"]) == ({"r3": 320}, 3)


def test_each_mamba_group_reserves_by_its_own_alignment():
    """am2seed27 (block 128, unit 16, alignments 16, 1, 256): the Scheduler reads the first
    group's 16 and runs r1's 256 tokens in one chunk; the group aligned at 256 writes no
    checkpoint there and takes no block for it: 15 free (14 if every group reserved one)."""
    _, ours, _, _ = replay_case(DATA / "am2seed27.trace.jsonl", async_scheduling=False)
    assert (ours[0]["step"], ours[0]["scheduled"], ours[0]["num_free_blocks"]) == \
        (5, {"r1": 256}, 15)


@pytest.mark.parametrize("asyn", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_align_case(trace: Path, asyn: bool):
    """Every step line, hit, preemption, first and last step, the prefix-cache stats and (13,
    27) the vLLM event batches."""
    assert_matches(answer_of(trace, "async.expected" if asyn else "expected"),
                   replay_case(trace, async_scheduling=asyn), asyn=asyn,
                   kv_events=config_of(trace).get("kv_events", False))


@pytest.mark.parametrize("group, said", [
    ({"type": "mamba", "checkpoint_alignment": 64},
     ("field 'checkpoint_alignment': only with \"checkpoint\": true (a group without prefill "
      "checkpoint blocks has no alignment)")),
    ({"type": "mamba", "checkpoint": False, "checkpoint_alignment": 64},
     "field 'checkpoint_alignment': only with \"checkpoint\": true"),
    ({"type": "mamba", "checkpoint": True, "checkpoint_alignment": 0},
     "field 'checkpoint_alignment': must be a positive integer, got 0"),
    ({"type": "mamba", "checkpoint": True, "checkpoint_alignment": True},
     "field 'checkpoint_alignment': must be a positive integer, got True"),
    ({"type": "mamba", "checkpoint": True, "checkpoint_alignment": "64"},
     "field 'checkpoint_alignment': must be a positive integer, got '64'"),
    ({"type": "full", "checkpoint_alignment": 64},
     "field 'checkpoint_alignment': not a key of a full group"),
])
def test_a_bad_alignment_is_one_line_naming_the_field(tmp_path, group, said):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"config": {"block_size": 64, "num_blocks": 100,
                                           "groups": [{"type": "full"}, group]}}) + "\n"
                    + json.dumps({"id": "r0", "prompt_token_ids": [1, 2, 3],
                                  "output_length": 2}) + "\n")
    res = CliRunner().invoke(app, ["replay", str(path)])
    assert res.exit_code == 2, (res.output, res.exception)
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert lines[0].startswith(f"error: {path}:1: field 'config.groups': {said}"), lines[0]
