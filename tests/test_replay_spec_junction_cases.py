"""vLLM 0.33's opt-in shared-prefix Mamba checkpoint (`--enable-mamba-shared-prefix-checkpoint`,
a config line's `enable_mamba_shared_prefix_checkpoint`) = vLLM's schedulers, step for step with
their KV events: with EAGLE or MTP drafts and a `prefix_match_unit` finer than the Mamba block,
a prompt chunk stops at the shared-prefix junction itself (not its block floor) while the
junction lies within the prompt, and each Mamba group keys its state there. Where vLLM's
predicate is false (ngram drafts, no drafts) the option changes nothing. The answers come from
tests/data/sched_spec_junction/oracle_junction.py (its README, its DESIGN.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_sched import (
    answer_of,
    assert_matches,
    check_spec_case,
    config_of,
    mamba_request,
    replay_case,
)

from kvcore.engine.mamba_split import mamba_aligned_split

DATA = Path(__file__).resolve().parent / "data"
CASES = sorted((DATA / "sched_spec_junction").glob("*.trace.jsonl"))
KEY = "enable_mamba_shared_prefix_checkpoint"
# the cases whose answer without the option is kept too (`X.off.jsonl`): the rule bites there
OFF = ["j12", "j146", "jtp20"]


def test_the_cases_are_all_there():
    assert [t.name.split(".")[0] for t in CASES] == [
        "j102", "j12", "j14", "j146", "j4", "j54", "j59", "j77", "jtp147", "jtp151", "jtp20",
        "jtp24", "jtp5", "jtp56"]


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_junction_case(trace: Path):
    got = check_spec_case(trace)
    assert config_of(trace)[KEY] is True
    assert got[0].config[KEY] is True
    assert config_of(trace)["prefix_match_unit"] < config_of(trace)["block_size"]


@pytest.mark.parametrize("name", OFF)
def test_without_the_option_the_same_case_is_vllm_default(tmp_path: Path, name: str):
    """The same trace less the key: vLLM's answer without the option (a different one)."""
    trace = DATA / "sched_spec_junction" / f"{name}.trace.jsonl"
    lines = trace.read_text().splitlines()
    first = json.loads(lines[0])
    del first["config"][KEY]
    plain = tmp_path / trace.name
    plain.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    off = answer_of(trace, "off")
    assert off != answer_of(trace)
    got = check_spec_case(plain, expected=off)
    assert KEY not in got[0].config


@pytest.mark.parametrize("name", ["pm39", "pm79"])
def test_ngram_drafts_are_unchanged_by_the_option(name: str):
    """No EAGLE group: vLLM's predicate is false, its answer the one recorded without it."""
    check_spec_case(DATA / "sched_spec_pmu" / f"{name}.trace.jsonl", **{KEY: True})


@pytest.mark.parametrize("asyn", [False, True], ids=["sync", "async"])
def test_no_drafts_are_unchanged_by_the_option(asyn: bool):
    trace = DATA / "sched_mamba" / "p16_a_shared_long.trace.jsonl"
    assert_matches(answer_of(trace, "async.expected" if asyn else "expected"),
                   replay_case(trace, async_scheduling=asyn, **{KEY: True}), asyn=asyn,
                   kv_events=config_of(trace).get("kv_events", False))


def test_the_split_stops_at_the_junction_inside_the_prompt():
    # a 100-token prompt from 0, blocks of 32, unit 4, a junction at 44: block-floored to 32
    # without the option, 44 with it
    r = mamba_request(100, 0, 44)
    assert mamba_aligned_split(r, 100, 0, 32, 2048, 0, 4) == 32
    assert mamba_aligned_split(r, 100, 0, 32, 2048, 0, 4, junction=True) == 44
    # a chunk starting mid-block (after a hit at 40): the floor from its start skips the
    # junction at 68 (40 + 0 blocks), its block's end stops it at 64; opted in, 64 still
    r = mamba_request(100, 40, 68)
    assert mamba_aligned_split(r, 60, 40, 32, 2048, 0, 4) == 24
    assert mamba_aligned_split(r, 60, 40, 32, 2048, 0, 4, junction=True) == 24
    # from 64: the floor skips 68 again (the chunk runs to the last cacheable boundary, 96),
    # opted in it stops at 68
    r = mamba_request(100, 64, 68)
    assert mamba_aligned_split(r, 36, 64, 32, 2048, 0, 4) == 32
    assert mamba_aligned_split(r, 36, 64, 32, 2048, 0, 4, junction=True) == 4


def test_past_the_prompt_the_junction_stays_block_floored():
    # a 40-token prompt preempted after 60 outputs replays 99 tokens; a junction at 72 lies
    # past the prompt: the manager keys nothing there, so the stop stays at 64
    r = mamba_request(40, 0, 72)
    r.append_output_token_ids(list(range(60)))
    assert mamba_aligned_split(r, 99, 0, 32, 2048, 0, 4, junction=True) == 64
    r = mamba_request(80, 0, 72)
    r.append_output_token_ids(list(range(20)))
    assert mamba_aligned_split(r, 99, 0, 32, 2048, 0, 4, junction=True) == 72


def _cli(*args: str):
    from typer.testing import CliRunner

    from kvcli.app import app

    return CliRunner().invoke(app, ["replay", *args, "--arrivals", "step", "--json"])


def test_the_flag_turns_off_what_the_config_line_turned_on():
    # j12: vLLM's requests hit 56 tokens in all with the option, 64 without it
    trace = str(DATA / "sched_spec_junction" / "j12.trace.jsonl")
    on = json.loads(_cli(trace).stdout)
    off = json.loads(_cli(trace, "--no-enable-mamba-shared-prefix-checkpoint").stdout)
    assert (on["hit_tokens"], on["config"][KEY]) == (56, True)
    assert off["hit_tokens"] == 64 and KEY not in off["config"]


def test_a_config_line_value_not_a_switch_is_refused_in_one_line(tmp_path: Path):
    lines = (DATA / "sched_spec_junction" / "j12.trace.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["config"][KEY] = "yes"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    res = _cli(str(bad))
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr == (f"error: {bad}:1: field 'config.{KEY}': must be true or false, "
                          "got 'yes'\n")


def test_with_a_cpu_tier_the_option_runs():
    # (no longer refused: checked against vLLM with the tier in ../offload_junction/)
    trace = str(DATA / "sched_spec_junction" / "j12.trace.jsonl")
    res = _cli(trace, "--kv-offloading-size", "1")
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout)
    assert got["config"][KEY] is True and got["config"]["kv_offloading_size"] == 1
