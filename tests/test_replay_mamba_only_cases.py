"""Attention-free Mamba models (one Mamba group, no attention group) = vLLM 0.33.0's Scheduler.

tests/data/sched_mamba_only/ holds random traces (`make_cases.py`) whose config line's groups
are all Mamba (one, as vLLM plans an attention-free model, or two), Mamba-1 or Mamba2, with
prefix caching on ("align" mode) or off ("none": vLLM's default for such a model, one block
of max_model_len a request, which EngineCore then makes the scheduler's block), with the real
Scheduler's and AsyncScheduler's answers (README there: the campaign, all matched).
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from oracle_sched import answer_of, assert_matches, config_of, replay_case

from kvcore.engine.replay import ReplayOptions, replay

DATA = Path(__file__).resolve().parent / "data" / "sched_mamba_only"
CASES = sorted(DATA.glob("*.trace.jsonl"))
MODEL = Path(__file__).resolve().parent / "data" / "mamba_only" / "tiny-mamba2.config.json"


def _kind(trace: Path) -> tuple:
    c = config_of(trace)
    return (c["enable_prefix_caching"], len(c["groups"]), c["groups"][0].get("checkpoint", False))


def test_the_cases_cover_both_modes_both_mixers_and_two_groups():
    kinds = [_kind(t) for t in CASES]
    assert len(CASES) == 31
    assert {(on, n) for on, n, _ in kinds} == {(False, 1), (False, 2), (True, 1), (True, 2)}
    assert {m for _, _, m in kinds} == {False, True}


@pytest.mark.parametrize("asyn", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_mamba_only_case(trace: Path, asyn: bool):
    """Every step line, hit, preemption, first and last step, the prefix-cache stats and (where
    the config line asks) the vLLM event batches."""
    assert_matches(answer_of(trace, "async.expected" if asyn else "expected"),
                   replay_case(trace, async_scheduling=asyn), asyn=asyn,
                   kv_events=config_of(trace).get("kv_events", False))


def test_a_none_mode_group_holds_max_model_len_a_block():
    """With prefix caching off the one Mamba group's block is max_model_len (the config line's
    block size is not its block), and every request holds one."""
    for t in CASES:
        if _kind(t)[:2] == (False, 1):
            s, _, _, _ = replay_case(t, async_scheduling=False)
            assert s.groups[0]["block_size"] == config_of(t)["max_model_len"]


@pytest.mark.parametrize(("given", "on", "block"), [
    ({}, False, 2048), ({"enable_prefix_caching": True}, True, 16),
    ({"enable_prefix_caching": False}, False, 2048)])
def test_a_models_replay_takes_vllms_prefix_caching_default(tmp_path, given, on, block):
    """An attention-free model runs with prefix caching off unless it is asked for, as vLLM
    (`ModelConfig.is_prefix_caching_supported`); its one Mamba group then holds 2,048 tokens a
    block (the assumed length), else the block size. Off by default, a warning says so."""
    path = tmp_path / "t.jsonl"
    path.write_text('{"id": "r0", "prompt_token_ids": [1, 2, 3, 4, 5], "output_length": 3}\n')
    steps = io.BytesIO()
    # (given: the options the command line set, as `kvcli replay` passes them)
    s = replay(str(path), ReplayOptions(model_config=str(MODEL), num_blocks=50, **given,
                                        given=frozenset({"model_config", "num_blocks", *given})),
               steps_out=steps)
    assert (s.config["enable_prefix_caching"], s.config["max_model_len"]) == (on, 2048)
    assert [g["block_size"] for g in s.groups] == [block]
    said = [w for w in s.warnings if "attention-free" in w]
    note = ("mamba2 is attention-free: vLLM serves it with prefix caching off unless asked "
            "(every hit rate 0; option enable_prefix_caching turns it on)")
    assert said == ([] if given else [note])
