"""Engine mode with an EAGLE-family draft over KV cache groups of different block sizes (the
draft's group at twice or half its target's, as vLLM's planning makes it for Qwen3-Next's or
gpt-oss-20b's EAGLE-3 draft) = vLLM 0.33's schedulers, step for step with their KV events: a
full-attention group coarser than the hash block registers its prompt's tail as a partial entry
whether or not hits may land there, and a dropping group coarser than the hash block registers
it from the tokens past the aligned prefix. The answers come from
tests/data/sched_spec_eagle_mixed/oracle_eagle_mixed.py (its README).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_sched import check_spec_case

from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay
from kvcore.errors import InputError

DATA = Path(__file__).resolve().parent / "data" / "sched_spec_eagle_mixed"
CASES = sorted(t for t in DATA.glob("*.trace.jsonl") if t.name != "em6.trace.jsonl")


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_eagle_mixed_case(trace: Path):
    check_spec_case(trace)
    sizes = {g.get("block_size") for g in json.loads(trace.read_text().splitlines()[0])
             ["config"]["groups"]}
    assert len(sizes) == 2


def test_the_cases_are_all_there():
    assert [t.name.split(".")[0] for t in sorted(DATA.glob("*.trace.jsonl"))] == [
        "em12", "em20", "em24", "em3", "em53", "em59", "em6", "em7", "em72", "em73", "em75"]


def test_chunked_local_beside_another_block_size_fails_as_vllm_asserts():
    """em6: full at 8, chunked local at 8, the draft at 16 (hit alignment 16): vLLM asserts
    at the lookup ("KV cache groups with different block sizes are not compatible with chunked
    local attention now"); kvcli's manager raises there too (not yet a start-up refusal)."""
    assert "chunked local attention" in (DATA / "em6.expected.jsonl").read_text()
    with pytest.raises(ValueError, match="chunked local attention needs every group to have "
                       r"the same block size \(block 8, hit alignment 16\)"):
        check_spec_case(DATA / "em6.trace.jsonl")


def _mamba_trace(tmp_path: Path) -> Path:
    cfg = json.loads((DATA / "em73.trace.jsonl").read_text().splitlines()[0])["config"]
    cfg["groups"] = [{"type": "mamba"}, {"type": "full"}, {"type": "full", "block_size": 32}]
    cfg["eagle_groups"] = [2]
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"config": cfg}) + "\n" + json.dumps(
        {"id": "a", "prompt_token_ids": list(range(3, 40)), "output_length": 3}) + "\n")
    return trace


def test_beside_mamba_groups_of_another_block_size_it_stays_refused(tmp_path):
    """13 of the 23 recorded cases with Mamba groups in "align" mode differ from vLLM in the
    aligned prefill split (em13: vLLM schedules 32 and 32 tokens at step 0, kvcli 60)."""
    with pytest.raises(InputError, match=r"eagle3 beside Mamba groups over KV cache groups of "
                       r"different block sizes \(16, 32 tokens\) is not modelled"):
        replay(str(_mamba_trace(tmp_path)), ReplayOptions())


def test_a_groups_block_size_must_be_a_positive_integer(tmp_path):
    trace = _mamba_trace(tmp_path)
    cfg = json.loads(trace.read_text().splitlines()[0])["config"]
    cfg["groups"] = [{"type": "full"}, {"type": "full", "block_size": 0}]
    trace.write_text(json.dumps({"config": cfg}) + "\n" + trace.read_text().splitlines()[1])
    with pytest.raises(InputError, match="a full group's block_size must be a positive "
                       "integer, got 0"):
        replay(str(trace), ReplayOptions())
