"""Engine mode with an EAGLE-family draft over KV cache groups of different block sizes (the
draft's group at twice or half its target's, as vLLM's planning makes it for Qwen3-Next's or
gpt-oss-20b's EAGLE-3 draft) = vLLM 0.33's schedulers, step for step with their KV events: a
full-attention group coarser than the hash block registers its prompt's tail as a partial entry
whether or not hits may land there, a dropping group coarser than the hash block registers
it from the tokens past the aligned prefix, and beside Mamba groups in "align" mode the prefill
split clips to the Mamba block (the checkpoint on the lcm) and a Mamba group finer than the lcm
keys the prompt's last hash boundary. The answers come from
tests/data/sched_spec_eagle_mixed/oracle_eagle_mixed.py (its README).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_sched import answer_of, check_spec_case, replay_case
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay
from kvcore.errors import InputError

DATA = Path(__file__).resolve().parent / "data" / "sched_spec_eagle_mixed"
# (em6, em67, em80: vLLM fails at the first lookup, a chunked local group finer than the lcm)
FAILING = ["em6", "em67", "em80"]
CASES = sorted(t for t in DATA.glob("*.trace.jsonl") if t.name.split(".")[0] not in FAILING)


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_eagle_mixed_case(trace: Path):
    check_spec_case(trace)
    sizes = {g.get("block_size") for g in json.loads(trace.read_text().splitlines()[0])
             ["config"]["groups"]}
    assert len(sizes) == 2


def test_the_cases_are_all_there():
    assert [t.name.split(".")[0] for t in sorted(DATA.glob("*.trace.jsonl"))] == [
        "em1", "em12", "em13", "em18", "em20", "em24", "em29", "em3", "em45", "em53", "em59",
        "em6", "em67", "em7", "em72", "em73", "em75", "em8", "em80", "em9"]


@pytest.mark.parametrize("name", FAILING)
def test_chunked_local_finer_than_the_lcm_is_refused_at_start_up(tmp_path, name):
    """em6: full at 8, chunked local at 8, the draft at 16 (hit alignment 16); em67, em80: full
    and chunked local at 32, the draft at 64. vLLM fails at the first lookup, which reaches
    the chunked group whatever the groups hold ("KV cache groups with different block sizes
    are not compatible with chunked local attention now": em6 at step 0, em67 and em80 at
    step 1, after an idle step); kvcli refuses at start-up in vLLM's words, one line, exit 2."""
    trace = DATA / f"{name}.trace.jsonl"
    lines = (DATA / f"{name}.expected.jsonl").read_text().splitlines()
    reason = ("KV cache groups with different block sizes are not compatible with chunked "
              "local attention now")
    assert json.loads(lines[-1]) == {"error": f"AssertionError: {reason}"}
    assert len(lines) == (1 if name == "em6" else 2)
    with pytest.raises(InputError) as e:
        replay(str(trace), ReplayOptions())
    assert (e.value.field, e.value.line) == ("config.groups", 1)
    small, big = (8, 16) if name == "em6" else (32, 64)
    assert e.value.message == (
        f"KV cache groups of different block sizes ({small}, {big} tokens) with a chunked "
        f"local attention group of {small} tokens, finer than their lcm ({big}), fail in vLLM "
        f"at its first prefix-cache lookup: '{reason}' (they run with prefix caching off)")
    r = CliRunner().invoke(app, ["replay", str(trace), "--steps", str(tmp_path / "s.jsonl")])
    assert r.exit_code == 2 and len(r.stderr.splitlines()) == 1 and "Traceback" not in r.output
    assert not (tmp_path / "s.jsonl").exists()


def _mamba_trace(tmp_path: Path) -> Path:
    cfg = json.loads((DATA / "em73.trace.jsonl").read_text().splitlines()[0])["config"]
    cfg["groups"] = [{"type": "mamba"}, {"type": "full"}, {"type": "full", "block_size": 32}]
    cfg["eagle_groups"] = [2]
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"config": cfg}) + "\n" + json.dumps(
        {"id": "a", "prompt_token_ids": list(range(3, 40)), "output_length": 3}) + "\n")
    return trace


def test_beside_mamba_groups_the_split_clips_to_the_mamba_block(tmp_path):
    """em13 (Mamba at 32, the draft's group at 64): vLLM schedules 32 and 32 at step 0, the
    chunks clipped to the Mamba block (its cache_config.block_size); with the lcm as the block
    kvcli scheduled 60 for r0 alone, and refused such groups at start-up until it matched. The
    same groups without a draft run too (tests/data/sched_mamba_mixed/ has vLLM's answers)."""
    trace = DATA / "em13.trace.jsonl"
    assert answer_of(trace)[0]["scheduled"] == {"r0": 32, "r1": 32}
    assert replay_case(trace, async_scheduling=False)[1][0]["scheduled"] == {"r0": 32, "r1": 32}
    cfg = json.loads(_mamba_trace(tmp_path).read_text().splitlines()[0])["config"]
    for key in ("num_speculative_tokens", "spec_method", "eagle_groups",
                "disable_lookahead_block_hashes", "spec_acceptance_rate", "spec_seed"):
        cfg.pop(key, None)
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"config": cfg}) + "\n" +
                     _mamba_trace(tmp_path).read_text().splitlines()[1] + "\n")
    assert replay(str(plain), ReplayOptions()).finished == 1


def test_a_groups_block_size_must_be_a_positive_integer(tmp_path):
    trace = _mamba_trace(tmp_path)
    cfg = json.loads(trace.read_text().splitlines()[0])["config"]
    cfg["groups"] = [{"type": "full"}, {"type": "full", "block_size": 0}]
    trace.write_text(json.dumps({"config": cfg}) + "\n" + trace.read_text().splitlines()[1])
    with pytest.raises(InputError, match="a full group's block_size must be a positive "
                       "integer, got 0"):
        replay(str(trace), ReplayOptions())
