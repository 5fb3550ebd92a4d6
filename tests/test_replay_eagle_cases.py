"""Engine mode with EAGLE-3 speculative decoding = vLLM 0.33's schedulers with an eagle3
`SpeculativeConfig`, step for step (docs/replay-engine.md, "Speculative decoding"), where kvcli
models it: K lookahead slots on every allocation, and with prefix caching the legacy block
hashes with the EAGLE block drop (`disable_lookahead_block_hashes`). The answers come from
tests/data/sched_spec_eagle/oracle_eagle.py; the cases with vLLM's default lookahead block
hashes are refused, saying so (their rule 4 in DESIGN.md there is not modelled yet).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_sched import (
    answer_of,
    assert_matches,
    assert_spec_matches,
    config_of,
    replay_recorded,
)

from kvcore.errors import InputError

DATA = Path(__file__).resolve().parent / "data" / "sched_spec_eagle"
CASES = sorted(DATA.glob("*.trace.jsonl"))


def lookahead_hashes(trace: Path) -> bool:
    cfg = config_of(trace)
    return cfg.get("enable_prefix_caching", True) and not cfg.get("disable_lookahead_block_hashes")


@pytest.mark.parametrize("trace", [t for t in CASES if not lookahead_hashes(t)],
                         ids=lambda p: p.name[:-12])
def test_eagle_case(trace: Path):
    expected = answer_of(trace)
    cfg = config_of(trace)
    asyn = cfg.get("async_scheduling", False)
    got = replay_recorded(trace)
    assert got[0].config["spec_method"] == "eagle3"
    assert_matches(expected, got, asyn=asyn, kv_events=cfg.get("kv_events", False))
    assert_spec_matches(expected, got, asyn)


@pytest.mark.parametrize("trace", [t for t in CASES if lookahead_hashes(t)],
                         ids=lambda p: p.name[:-12])
def test_lookahead_hashes_are_refused(trace: Path):
    with pytest.raises(InputError) as err:
        replay_recorded(trace)
    assert err.value.field == "config.spec_method"
    assert "eagle3 with prefix caching: its lookahead block hashes (vLLM's default) are not " \
           "modelled yet" in err.value.message


def test_eagle_with_several_groups_is_refused(tmp_path):
    """vLLM marks the groups that hold the draft's layers; kvcli does not model which."""
    first = (DATA / "seed90118.trace.jsonl").read_text().splitlines()
    cfg = json.loads(first[0])
    cfg["config"]["groups"] = [{"type": "full"}, {"type": "sliding_window",
                                                  "sliding_window": 64}]
    trace = tmp_path / "two_groups.trace.jsonl"
    trace.write_text("\n".join([json.dumps(cfg), *first[1:]]) + "\n")
    with pytest.raises(InputError, match="eagle3 with several KV cache groups is not modelled"):
        replay_recorded(trace)


def test_the_cases_are_all_there():
    assert [t.name.split(".")[0] for t in CASES if not lookahead_hashes(t)] == [
        "aseed90110", "aseed90118", "kseed90100", "kseed90103", "seed90100", "seed90118"]
    assert len(CASES) == 12
