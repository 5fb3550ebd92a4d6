"""Mamba2 groups (prefill checkpoint blocks) at the scheduler level = vLLM 0.33.0's Scheduler.

A Mamba2 layer (vLLM's ``MambaMixer2``: Bamba, Granite-4.0-H, Nemotron-H) writes the state at the
prefill's last block boundary from inside a chunk, so vLLM does not split the prompt's last chunk
there (``use_internal_checkpoint`` in ``Scheduler._mamba_block_aligned_split``) and its
MambaManager reserves a block for that checkpoint. tests/data/sched_mamba/m2_* are the seven
Jamba-layout cases with every Mamba group a Mamba2 one, m2seed13/14/18 three random ones
(retention 0, 64 tokens, dense), each answered by the real Scheduler and AsyncScheduler through
tests/data/oracle_mamba.py (sched_mamba/README.md). Before this, kvcli split them as Jamba's:
every case but d differed from its first prefill (a, step 0: 240 tokens, 389 free blocks, where
vLLM schedules 257 and holds 381).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import answer_of, assert_matches, config_of, mamba_request, replay_case

from kvcore.engine.mamba_split import mamba_aligned_split
from kvcore.managers.mamba_checkpoint import checkpoint_fits

DATA = Path(__file__).resolve().parent / "data" / "sched_mamba"
CASES = sorted(DATA.glob("m2_*.trace.jsonl")) + sorted(DATA.glob("m2seed*.trace.jsonl"))
SYNC_KEYS = ("step", "scheduled", "admitted", "preempted", "finished", "num_free_blocks")


def case(name: str) -> Path:
    return next(t for t in CASES if t.name.startswith(name))


def test_the_cases_are_all_there():
    assert [t.name.split(".")[0] for t in CASES] == [
        "m2_a_shared_long", "m2_b_shared_short", "m2_c_chunked_budget_100",
        "m2_d_budget_below_block", "m2_e_preemption", "m2_f_block16", "m2_g_dense_retention",
        "m2seed13", "m2seed14", "m2seed18", "m2seed7887"]
    for t in CASES:
        assert all(g.get("checkpoint") for g in config_of(t)["groups"] if g["type"] == "mamba")


@pytest.mark.parametrize("prompt, start, n, junction, budget, bs, mamba2, mamba1", [
    (257, 0, 257, 0, 512, 80, 257, 240),    # a0 step 0: the checkpoint at 240 from inside
    (160, 0, 160, 0, 512, 80, 160, 80),     # b0, e0: exactly two blocks, checkpoint at 80
    (415, 320, 95, 0, 100, 80, 95, 80),     # c0 step 4: the last chunk, checkpoint at 400
    (415, 0, 100, 0, 100, 80, 80, 80),      # c0 step 0: short of the prefill's end: floored
    (330, 0, 330, 160, 512, 80, 160, 160),  # a1 step 4: the junction stop still applies
    (66, 0, 66, 0, 96, 16, 66, 64),         # f0: block 16, checkpoint at 64
    (90, 80, 10, 0, 512, 80, 10, 10),       # a checkpoint not a block past the start: none
    (100, 0, 100, 0, 512, 80, 100, 80),     # within the first two blocks: in one chunk
])
def test_a_last_chunk_holding_the_checkpoint_is_not_split(prompt, start, n, junction, budget,
                                                          bs, mamba2, mamba1):
    r = mamba_request(prompt, start, junction)
    assert mamba_aligned_split(r, n, start, bs, budget, 1) == mamba2
    assert mamba_aligned_split(r, n, start, bs, budget, 0) == mamba1


@pytest.mark.parametrize("start, end, position, fits", [
    (0, 257, 240, True),
    (0, 160, 80, True),     # the chunk reaches a block past its first
    (0, 80, 0, False),      # no checkpoint inside a one-block prompt
    (80, 170, 160, True),
    (80, 160, 80, False),   # the checkpoint must lie a block after the start
    (40, 257, 240, False),  # a chunk starting mid-block cannot export one
    (0, 240, 240, False),   # not strictly inside the chunk
])
def test_checkpoint_fits(start, end, position, fits):
    assert checkpoint_fits(start, end, position, 80, 1, 80) is fits


def test_the_checkpoint_takes_a_block_and_is_what_a_resend_hits():
    """m2_a, sync: a0's 257-token prompt runs in one chunk; each of the seven Mamba groups
    holds the checkpoint's block (the state at 240) besides the running one: 400 - 1 null -
    7 x 2 - 4 attention blocks = 381 free. a4, a0's prompt again, hits that state: 240."""
    t = case("m2_a_")
    _, ours, reqs, _ = replay_case(t, async_scheduling=False)
    assert (ours[0]["scheduled"], ours[0]["num_free_blocks"]) == ({"a0": 257}, 381)
    assert reqs["a4"]["hit_tokens"] == 240
    theirs = [e for e in answer_of(t)[:-1] if e["scheduled"] or e["preempted"]]
    assert [{k: e[k] for k in SYNC_KEYS} for e in ours] == \
        [{k: e[k] for k in SYNC_KEYS} for e in theirs]


@pytest.mark.parametrize("asyn", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_mamba2_case(trace: Path, asyn: bool):
    """Every step line, hit, preemption, first and last step, the prefix-cache stats and (a,
    e, m2seed13, m2seed18) the vLLM event batches. m2seed18 (dense retention) also needs the
    checkpoint block every chunk takes there, not only the prefill's last one."""
    assert_matches(answer_of(trace, "async.expected" if asyn else "expected"),
                   replay_case(trace, async_scheduling=asyn), asyn=asyn,
                   kv_events=config_of(trace).get("kv_events", False))
