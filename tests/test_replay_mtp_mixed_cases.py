"""Engine mode with an MTP draft over Mamba groups in "align" mode beside attention groups of
other block sizes = vLLM 0.33.0's Scheduler and AsyncScheduler, step for step with their KV
events, drafts and spec stats.

The nine cases of tests/data/sched_spec_mtp_mixed/ (README there: 80 generated, 77 ran and
matched, 3 refused alike) were answered by ../sched_spec_eagle_mixed/oracle_eagle_mixed.py run
with ``--mtp``. They need the rules ../sched_mamba_mixed/ found without drafts (each taken out,
of the 80: the split's block the lcm 49 differ, the checkpoint's grid and hash block the Mamba
block 29, the hash block alone 6, the plain Mamba manager for a group finer than the lcm 8).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import answer_of, check_spec_case, config_of, mamba_request

from kvcore.engine.mamba_split import mamba_aligned_split
from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay
from kvcore.errors import InputError

DATA = Path(__file__).resolve().parent / "data" / "sched_spec_mtp_mixed"
REFUSED = ["mtm74"]
CASES = sorted(t for t in DATA.glob("*.trace.jsonl") if t.name[:-12] not in REFUSED)


def test_the_cases_are_all_there():
    assert sorted(t.name[:-12] for t in DATA.glob("*.trace.jsonl")) == [
        "mtm10", "mtm29", "mtm3", "mtm45", "mtm5", "mtm58", "mtm69", "mtm72", "mtm74",
        "mtpu48", "mtpu48nu"]


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_mtp_mixed_case(trace: Path):
    cfg = config_of(trace)
    assert cfg["spec_method"] == "mtp" and cfg["enable_prefix_caching"]
    check_spec_case(trace)
    assert len({g.get("block_size", cfg["block_size"]) for g in cfg["groups"]}) >= 2


def test_the_pool_vllm_refuses_is_refused():
    """mtm74: one max_model_len request needs 7 blocks (3 Mamba with K 1, 4 sliding window)
    of the 6 usable; vLLM refuses to start, kvcli alike."""
    trace = DATA / "mtm74.trace.jsonl"
    assert answer_of(trace) == [{"error": "SystemExit: vLLM would refuse to start: one "
                                 "max_model_len request needs 7 blocks, 6 usable"}]
    with pytest.raises(InputError, match="needs 7 blocks .* but only 6 are usable"):
        replay(str(trace), ReplayOptions(arrivals="step"))


def test_an_mtp_chunk_stops_short_of_a_checkpoint_on_the_lcm():
    """mtm58's r0 (102 tokens; Mamba2 at 32 beside full attention at 64, MTP's legacy drop):
    vLLM schedules 64 at step 0. Its checkpoint sits on the lcm grid a block lower (position 0:
    none to write inside), so the chunk stops at the last Mamba boundary a block lower (64); on
    the Mamba block's grid the checkpoint at 64 would be written inside and the chunk run whole
    (102)."""
    steps = [e for e in answer_of(DATA / "mtm58.trace.jsonl") if e.get("scheduled")]
    assert steps[0]["scheduled"] == {"r0": 64} and steps[1]["scheduled"] == {"r0": 38, "r1": 32}
    r = mamba_request(102)
    assert mamba_aligned_split(r, 102, 0, 32, 256, 1, drop=True, grid=64, hash_block=32) == 64
    assert mamba_aligned_split(r, 102, 0, 32, 256, 1, drop=True) == 102
