"""vLLM 0.33's opt-in shared-prefix Mamba checkpoint (`enable_mamba_shared_prefix_checkpoint`)
with the CPU tier, step for step against vLLM with the tier's and the KV events.

`data/offload_junction/` (README there): ../offload_spec_more's oracle (the real
OffloadingConnector, EAGLE-family drafts over Mamba groups, partial hash hits) with the option
set on vLLM's CacheConfig. The OffloadingConnector takes no divergent-hit lookup, so the
scheduler keeps `get_computed_blocks` and its junction: a prompt chunk stops at the junction,
each Mamba group keys its state there, and its copy-on-write hands that state to the tier as a
partial tail, which a later sibling loads. Where one step hands the tier the junction's state and
the prompt tail's, vLLM's connector asserts; kvcli stops there in one line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from oracle_sched import answer_of, config_of, replay_case
from spec_offload_check import check_spec_offload_case

from kvcore.errors import InputError

DATA = Path(__file__).parent / "data" / "offload_junction"
CASES = sorted(DATA.glob("*.trace.jsonl"))
RAN = [t for t in CASES if "error" not in answer_of(t)[-1]]
KEY = "enable_mamba_shared_prefix_checkpoint"
# the answers without the option kept too
OFF = ["od1083", "od1209", "od1341", "oj278", "oj68", "oj75", "ojt99"]


def test_the_cases_are_all_there() -> None:
    assert [t.name.split(".")[0] for t in RAN] == [
        "od1083", "od1209", "od1326", "od1341", "oj120", "oj17", "oj24", "oj278", "oj5", "oj68",
        "oj75", "oj94", "ojt140", "ojt42", "ojt45", "ojt89", "ojt99"]


@pytest.mark.parametrize("trace", RAN, ids=[t.name.split(".")[0] for t in RAN])
def test_case(trace: Path) -> None:
    assert config_of(trace)[KEY] is True
    assert config_of(trace)["prefix_match_unit"] < config_of(trace)["block_size"]
    check_spec_offload_case(trace)


def _without_the_key(trace: Path, tmp_path: Path) -> Path:
    lines = trace.read_text().splitlines()
    first = json.loads(lines[0])
    del first["config"][KEY]
    plain = tmp_path / trace.name
    plain.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    return plain


@pytest.mark.parametrize("name", OFF)
def test_without_the_option_the_same_case_is_vllm_default(tmp_path: Path, name: str) -> None:
    """The trace less the key against vLLM's answer without the option (a different one)."""
    trace = DATA / f"{name}.trace.jsonl"
    off = answer_of(trace, "off")
    assert off[:-1] != answer_of(trace)[:-1]
    plain = _without_the_key(trace, tmp_path)
    off_file = DATA / f"{name}.off.jsonl"
    gz = off_file.with_name(off_file.name + ".gz")
    shutil.copy(gz if gz.exists() else off_file,
                tmp_path / f"{name}.expected.jsonl{'.gz' if gz.exists() else ''}")
    check_spec_offload_case(plain)


def _tail_offers(lines: list[dict], rid: str) -> list[tuple[int, str]]:
    return [(e["step"], c) for e in lines[:-1] for o in e.get("store_offers", {}).get(rid, ())
            for chunks in o["chunks"].values() for c in chunks if isinstance(c, str)]


def test_the_junction_state_is_stored_and_loaded() -> None:
    """oj68 (Jamba's seven Mamba groups and a full one, blocks of 80, unit 16): p680r3's chunk
    stops at its junction, 304 (3 blocks and 64 tokens), the tier is offered the state there
    (`t304`, step 33), and p680r5 loads 304 tokens from it (step 51). Without the option the
    state is not kept: no such offer, p680r5 loads 240, and the CPU hits 720 tokens, not 784."""
    trace = DATA / "oj68.trace.jsonl"
    on, off = answer_of(trace), answer_of(trace, "off")
    assert (33, "t304") in _tail_offers(on, "p680r3")
    assert all(c != "t304" for _, c in _tail_offers(off, "p680r3"))
    assert [e["lookups"]["p680r5"] for e in on[:-1] if "p680r5" in e.get("lookups", {})] == \
        [[0, 304]]
    assert [e["lookups"]["p680r5"] for e in off[:-1] if "p680r5" in e.get("lookups", {})] == \
        [[0, 240]]
    assert (on[-1]["summary"]["offload"]["cpu_hit_tokens"],
            off[-1]["summary"]["offload"]["cpu_hit_tokens"]) == (784, 720)


def _offers_at(lines: list[dict], step: int, rid: str) -> tuple[list, dict, list]:
    line = next(e for e in lines if e["step"] == step)
    return line["finished"], line["scheduled"], line["store_offers"][rid]


@pytest.mark.parametrize("kind", ["expected", "off"])
def test_a_state_not_yet_keyed_is_offered_by_its_position(tmp_path: Path, kind: str) -> None:
    """A Mamba state past the prompt handed to the tier on a step that schedules nothing of
    its request is offered before vLLM's `offload_keys` reach it (they grow for the requests a
    step schedules and at `request_finished`, which comes after): the oracle writes "tN", not
    the chunk. oj278: p2780r0 (91 prompt tokens, 7 out, blocks of 48) is seen finished at step
    5, its three Mamba groups' states at 96 offered as "t96"; the full group's chunk at 96 is
    offered at step 6 as chunk 1. od1083 (Jamba's seven Mamba groups and a full one, blocks of
    80): p10830r0 (115 + 47) at step 40, "t160", then chunk 1. With the option and without."""
    for name, step, rid, n_mamba, tokens in (("oj278", 5, "p2780r0", 3, 96),
                                             ("od1083", 40, "p10830r0", 7, 160)):
        trace = DATA / f"{name}.trace.jsonl"
        first = [{"chunks": {str(g): [f"t{tokens}"]}, "n_absent": 1} for g in range(n_mamba)]
        then = [{"chunks": {str(n_mamba): [tokens // config_of(trace)["block_size"] - 1]},
                 "n_absent": 1}]
        if kind == "off":
            trace = _without_the_key(trace, tmp_path)
        ours = replay_case(trace, async_scheduling=True)[1]
        for lines in (answer_of(DATA / f"{name}.trace.jsonl", kind)[:-1], ours):
            assert _offers_at(lines, step, rid) == ([rid], {}, first)
            assert _offers_at(lines, step + 1, rid)[2] == then


def test_two_tails_in_one_step_stop_as_vllm_does() -> None:
    """oj81: p810r8's chunk stopped at its junction, 240; its next chunk runs to the prompt's
    end and keys the prompt tail, 368; that step hands the tier both copies, and vLLM's
    `_build_partial_tail_store_jobs` asserts one boundary a request. The same case without the
    option runs (vLLM answered it)."""
    trace = DATA / "oj81.trace.jsonl"
    assert answer_of(trace)[-1] == {"error": "AssertionError: "}
    with pytest.raises(InputError) as e:
        replay_case(trace, async_scheduling=True)
    assert e.value.field == f"config.{KEY}" and e.value.line == 1
    assert e.value.message.startswith(
        "request p810r8: one step hands the CPU tier Mamba states inside blocks at tokens 240 "
        "and 368 (the shared-prefix junction's and the prompt tail's): vLLM 0.33 fails here too")
    s = replay_case(trace, async_scheduling=True, **{KEY: False},
                    given=frozenset({"arrivals", "async_scheduling", KEY}))[0]
    assert s.steps > 0 and KEY not in s.config


def test_the_option_runs_with_the_tier_from_the_command_line() -> None:
    """The start-up refusal of the pair is gone: ojt99 (mtp, sync) replays with the option
    from its config line and without it by the flag, each with vLLM's CPU hit tokens."""
    from typer.testing import CliRunner

    from kvcli.app import app

    trace = DATA / "ojt99.trace.jsonl"
    args = ["replay", str(trace), "--arrivals", "step", "--json", "--no-async-scheduling"]
    got = []
    for extra in ([], ["--no-enable-mamba-shared-prefix-checkpoint"]):
        out = CliRunner().invoke(app, [*args, *extra])
        assert out.exit_code == 0, out.output
        got.append(json.loads(out.stdout))
    assert got[0]["config"][KEY] is True and KEY not in got[1]["config"]
    assert [g["offload"]["cpu_hit_tokens"] for g in got] == [
        answer_of(trace, kind)[-1]["summary"]["offload"]["cpu_hit_tokens"]
        for kind in ("expected", "off")] == [320, 496]
