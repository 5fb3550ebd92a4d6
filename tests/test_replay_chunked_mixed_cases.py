"""Engine mode without drafts over KV cache groups of different block sizes with a chunked local
attention group = vLLM 0.33's schedulers, step for step with their KV events, and refused
where vLLM fails.

vLLM's chunked local manager asserts that its block is the hit alignment (the groups' lcm), and
its lookup's fixed point visits every spec group in its first round: with prefix caching on, a
chunked group finer than the lcm fails at the first lookup, the first request's arrival step
(the lines before it idle), after vLLM's start-up checks (`cms22`: the pool is refused first).
With prefix caching off, or the chunked group at the lcm, it runs. The answers come from
tests/data/sched_chunked_mixed/oracle_chunked_mixed.py (its README).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from oracle_sched import answer_of, assert_matches, config_of, replay_case
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine import first_lookup, startup
from kvcore.errors import InputError

DATA = Path(__file__).resolve().parent / "data" / "sched_chunked_mixed"
CASES = sorted(DATA.glob("*.trace.jsonl"))
REASON = "KV cache groups with different block sizes are not compatible with chunked local " \
    "attention now"


def _error(trace: Path) -> str | None:
    return answer_of(trace)[-1].get("error")


def _replay(trace: Path):
    return replay_case(trace, async_scheduling=config_of(trace)["async_scheduling"])


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_chunked_mixed_case(trace: Path):
    cfg = config_of(trace)
    sizes = [g["block_size"] for g in cfg["groups"]]
    assert len(set(sizes)) > 1 and "num_speculative_tokens" not in cfg
    error = _error(trace)
    if error is None:
        assert_matches(answer_of(trace), _replay(trace), asyn=cfg["async_scheduling"],
                       kv_events=cfg["kv_events"])
        return
    with pytest.raises(InputError) as e:
        _replay(trace)
    if error.startswith("SystemExit: vLLM would refuse to start"):
        needed = error.split("needs ")[1].split(" blocks")[0]
        assert e.value.message.startswith("one request of max_model_len") and \
            f"needs {needed} blocks" in e.value.message
        return
    assert error == f"AssertionError: {REASON}"
    chunked = next(g["block_size"] for g in cfg["groups"] if g["type"] == "chunked_local")
    assert cfg["enable_prefix_caching"] and chunked < math.lcm(*sizes)
    assert (e.value.field, e.value.line) == ("config.groups", 1)
    assert f"'{REASON}'" in e.value.message
    # (vLLM idles until the first request arrives and fails at its lookup)
    steps = answer_of(trace)[:-1]
    first = min(json.loads(x)["arrival_step"] for x in trace.read_text().splitlines()[1:])
    assert len(steps) == first and all(s["idle"] for s in steps)


def test_the_cases_are_all_there():
    assert [t.name.split(".")[0] for t in CASES] == [
        "cm12", "cm22", "cm27", "cm28", "cm31", "cm36", "cm41", "cm46", "cm53", "cm63", "cm76",
        "cm84", "cm85", "cm89", "cms22"]
    assert sum(_error(t) == f"AssertionError: {REASON}" for t in CASES) == 3


def test_the_refusal_is_one_line_in_vllms_words(tmp_path):
    """cm22: full attention at 32, chunked local at 8 (hit alignment 32), prefix caching on."""
    trace = DATA / "cm22.trace.jsonl"
    with pytest.raises(InputError) as e:
        _replay(trace)
    assert e.value.message == (
        "KV cache groups of different block sizes (8, 32 tokens) with a chunked local "
        "attention group of 8 tokens, finer than their lcm (32), fail in vLLM at its first "
        f"prefix-cache lookup: '{REASON}' (they run with prefix caching off)")
    r = CliRunner().invoke(app, ["replay", str(trace), "--steps", str(tmp_path / "s.jsonl")])
    assert r.exit_code == 2 and len(r.stderr.splitlines()) == 1 and "Traceback" not in r.output
    assert r.stderr.startswith(f"error: {trace}:1: field 'config.groups': KV cache groups")
    assert not (tmp_path / "s.jsonl").exists()


def test_without_the_rule_the_failing_cases_crash(monkeypatch):
    """The refusal taken out, the 3 cases vLLM fails in reach kvcli's manager, which raises
    (a traceback; 30 of the 90 generated cases so)."""
    failing = [t for t in CASES if _error(t) == f"AssertionError: {REASON}"]
    monkeypatch.setattr(first_lookup, "chunked_block_refusal", lambda *a: None)
    for trace in failing:
        with pytest.raises(ValueError, match="chunked local attention needs every group"):
            _replay(trace)


def test_the_pool_is_refused_first(monkeypatch):
    """Refused before the pool's start-up check (where it was), `cms22` named the chunked
    group where vLLM refuses the pool (6 of the 12 halved pools so)."""
    real = startup.check_startup

    def refused_first(groups, cfg, num_blocks, trace):
        if (err := first_lookup.chunked_block_refusal(cfg, trace, groups)) is not None:
            raise err
        real(groups, cfg, num_blocks, trace)

    assert _error(DATA / "cms22.trace.jsonl").startswith("SystemExit: vLLM would refuse")
    monkeypatch.setattr(startup, "check_startup", refused_first)
    with pytest.raises(InputError, match="with a chunked local attention group of 8"):
        _replay(DATA / "cms22.trace.jsonl")
