"""Option combinations no other oracle case drew = vLLM 0.33.0, step for step (`data/sched_gaps/`).

Random cases from `make_gap_cases.py` (README there): `max_model_len` stopping decodes (sync,
async, hybrid groups, the stress sizes, the scheduler knobs, Mamba groups, a CPU tier, a CPU tier
over hybrid groups), chunked prefill off over a CPU tier, the CPU-tier knobs over hybrid groups, a
retention interval over a CPU tier with a sliding window, and (`make_combo_cases.py`) the newest
CPU-tier features together: retention, LoRA, knobs, caps and Mamba partial tails. Each case must
match as the other oracle cases do (`oracle_sched.assert_matches`,
`test_offload_replay.test_offload_case`); the capped cases must also produce each request's output
count as vLLM did (no other comparison reads it, and a cap is exactly where it differs from
`output_length`), and the retention cases must stop matching at retention 0 (else the interval did
nothing there).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_offload_replay as offload_cases  # (a module: its tests are not collected here again)
from oracle_sched import answer_of, assert_matches, config_of, replay_case

from kvcore.errors import InputError

DATA = Path(__file__).resolve().parent / "data" / "sched_gaps"
# a trace vLLM refuses at start-up (a retention interval with no sliding window), kvcli too
REFUSED = DATA / "gyrseed602.trace.jsonl"
CASES = [t for t in sorted(DATA.glob("*.trace.jsonl")) if t != REFUSED]


def _flags(trace: Path) -> str:
    """The overlay letters of a case's name (`g` + base letter + overlays + `a` + `seedN`)."""
    return trace.name.split("seed")[0][2:]


def _asyn(trace: Path) -> bool:
    return config_of(trace).get("async_scheduling", False)


def _offload(trace: Path) -> bool:
    return "kv_offloading_size_chunks" in config_of(trace)


def _ids(traces: list[Path]) -> list[str]:
    return [t.name.split(".")[0] for t in traces]


@pytest.mark.parametrize("trace", CASES, ids=_ids(CASES))
def test_case_matches_vllm(trace: Path) -> None:
    asyn = _asyn(trace)
    if _offload(trace):
        offload_cases.test_offload_case(trace, "expected", asyn)
    else:
        assert_matches(answer_of(trace), replay_case(trace, async_scheduling=asyn), asyn=asyn,
                       kv_events=config_of(trace).get("kv_events", False))


CAPPED = [t for t in CASES if "c" in _flags(t)]


@pytest.mark.parametrize("trace", CAPPED, ids=_ids(CAPPED))
def test_length_cap_outputs(trace: Path) -> None:
    """Every request's output count is vLLM's, and some request was stopped by the cap."""
    asked = {r["id"]: r["output_length"]
             for r in map(json.loads, trace.read_text().splitlines()[1:])}
    theirs = answer_of(trace)[-1]["summary"]["requests"]
    _, _, ours, _ = replay_case(trace, async_scheduling=_asyn(trace))
    assert {r["id"]: ours[r["id"]]["generated_tokens"] for r in theirs} == \
        {r["id"]: r["num_output_tokens"] for r in theirs}
    assert any(r["num_output_tokens"] < asked[r["id"]] for r in theirs)


RETAINED = [t for t in CASES if "r" in _flags(t)]


@pytest.mark.parametrize("trace", RETAINED, ids=_ids(RETAINED))
def test_retention_interval_matters(trace: Path) -> None:
    assert config_of(trace)["prefix_cache_retention_interval"] > 0
    with pytest.raises(AssertionError):
        offload_cases.test_offload_case(trace, "expected", _asyn(trace),
                                        prefix_cache_retention_interval=0)


def test_refused_like_vllm() -> None:
    """A positive interval with no sliding-window group: vLLM refuses to start, kvcli too."""
    assert "no sliding-window or Mamba KV cache group" in answer_of(REFUSED)[-1]["error"]
    with pytest.raises(InputError, match="no sliding-window or Mamba KV cache group"):
        replay_case(REFUSED, async_scheduling=False)


def test_the_cases_cover_the_gaps() -> None:
    """Each gap keeps a case (else a regenerated set lost one)."""
    bases = {t.name[1] for t in CASES}
    assert bases == {"s", "x", "m", "o", "y", "d", "e", "p", "w"}
    assert {_asyn(t) for t in CAPPED} == {False, True}
    assert any("groups" in config_of(t) and _offload(t) for t in CAPPED)
    assert any(not config_of(t).get("enable_chunked_prefill", True) and _offload(t)
               for t in CASES)
    assert {_asyn(t) for t in RETAINED} == {False, True}


def test_a_stall_of_the_load_holders_names_them() -> None:
    """vLLM stalls on `stalled/gykcseed456` (the oracle gave up after 1,000 idle steps): the
    head of the requests held for CPU loads is refused, and the other's blocks, its load done,
    never come free. kvcli blamed the pool and the waiting queue's head, `h456r2`, which waits
    behind them."""
    with pytest.raises(InputError) as err:
        replay_case(DATA / "stalled" / "gykcseed456.trace.jsonl", async_scheduling=False)
    assert str(err.value).endswith(
        "gykcseed456.trace.jsonl:12: field 'num_blocks': request 'h456r10' can never be admitted "
        "(stalled for 1000 steps with nothing running: vLLM would wait forever): the 2 requests "
        "held for their CPU loads (it, 'h456r1') hold 16 of the 23 usable blocks; the scan stops "
        "at it, the pool has too few left for it, and the others never run to free theirs; give "
        "more num_blocks")


def _domains(trace: Path) -> int:
    return len({(r.get("lora"), r.get("cache_salt"))
                for r in map(json.loads, trace.read_text().splitlines()[1:])})


def _tail_offers(trace: Path) -> int:
    """Partial-tail keys vLLM offered to store (written "tN", N the token position)."""
    return sum(k.startswith("t") for e in answer_of(trace)[:-1]
               for offers in e.get("store_offers", {}).values() for o in offers
               for keys in o["chunks"].values() for k in keys if isinstance(k, str))


def test_the_combinations_are_kept() -> None:
    """`make_combo_cases.py`'s kept cases (README.md here) each hold their combination: a
    positive interval with LoRA over a Mamba hybrid tier and over a sliding one, dense
    retention with the knobs, prefix caching off and a cap under async, partial tails (a unit
    finer than the block) with the knobs and a cap, once with LoRA, and a windowed group alone
    with the knobs."""
    cfg = {t.name.split(".")[0]: config_of(t) for t in CASES}
    assert {"mamba", "sliding_window"} <= {g["type"] for g in cfg["gerclaseed82182"]["groups"]}
    assert cfg["gerclaseed82182"]["prefix_cache_retention_interval"] == 64
    assert cfg["gykrltseed82074"]["prefix_cache_retention_interval"] == 64
    assert [_domains(DATA / f"{n}.trace.jsonl") for n in ("gerclaseed82182", "gykrltseed82074",
                                                           "gpkclseed82117")] == [7, 4, 6]
    dense = cfg["gdkcaseed82001"]
    assert dense["prefix_cache_retention_interval"] is None and dense["async_scheduling"]
    assert (dense["policy"], dense["watermark"], dense["max_num_active_seqs"],
            dense["enable_prefix_caching"]) == ("priority", 0.1, 3, False)
    for n in ("gpkcaseed81200", "gpkclseed82117"):
        assert cfg[n]["prefix_match_unit"] < cfg[n]["block_size"]
    assert [_tail_offers(DATA / f"{n}.trace.jsonl")
            for n in ("gpkcaseed81200", "gpkclseed82117")] == [36, 80]
    assert [g["type"] for g in cfg["gwkaseed81251"]["groups"]] == ["sliding_window"]
    assert cfg["gwkaseed81251"]["hash_algo"] == "sha256_cbor"

