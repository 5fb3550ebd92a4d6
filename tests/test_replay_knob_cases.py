"""vLLM options no other oracle case sets = vLLM 0.33.0, step for step (`data/sched_knobs/`).

Random cases drawn with `make_cases.py --knobs` / `make_hash_cases.py --knobs` (README there):
prefix caching off, `max_num_active_seqs`, the adaptive long-prefill threshold, the four hash
algorithms, with KV events, sync, async, hybrid groups, a hash-id trace and a CPU tier; and with
`make_cases.py --retention`: a sliding-window group's `prefix_cache_retention_interval`; and
Mamba groups with `sched_mamba/make_random.py --knobs`. The
scheduler oracle's answers were recorded with `PYTHONHASHSEED=0`, which vLLM takes as NONE_HASH's
seed, so those traces say `"hash_seed": "0"` (kvcli's `--hash-seed`); the CPU-tier answers come
from `sched_offload`, which runs without `PYTHONHASHSEED` (its sha256 case keeps vLLM's fixed
seed; its xxhash one was answered with the seed fixed at "0", README).

Each case must match as the other oracle cases do (`oracle_sched.assert_matches`,
`test_offload_replay.test_offload_case`), and each knob must matter to the cases that carry it:
replayed with the knob changed, the same case no longer matches.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import test_offload_replay as offload_cases  # (a module: its tests are not collected here again)
from oracle_sched import answer_of, assert_matches, config_of, replay_case

from kvcore.engine.replay import ReplayOptions, replay
from kvcore.engine.vllm_events import VllmEvents

DATA = Path(__file__).resolve().parent / "data" / "sched_knobs"
SCHED = sorted(DATA.glob("*.trace.jsonl")) + sorted(DATA.glob("k*.hash.jsonl"))
OFFLOAD = sorted(DATA.glob("o*.hash.jsonl"))


def _asyn(trace: Path) -> bool:
    return config_of(trace).get("async_scheduling", False)


# (trace, async): as its config line says, and the Mamba cases ([n]kmseed, [n]km2seed: answered by
# `oracle_mamba.py` both ways, `X.async.expected.jsonl`) async too
RUNS = [(t, _asyn(t)) for t in SCHED] + [
    (t, True) for t in SCHED if t.with_name(t.name.replace(".trace.", ".async.expected.")).exists()]


def _matches(trace: Path, asyn: bool | None = None, **changed) -> bool:
    """Whether the replay, with ``changed`` options over the config line, gives the answer."""
    if asyn is None:
        asyn = _asyn(trace)
    kind = "async.expected" if asyn and not _asyn(trace) else "expected"
    given = frozenset({"arrivals", "async_scheduling", *changed})
    try:
        assert_matches(answer_of(trace, kind),
                       replay_case(trace, async_scheduling=asyn, given=given, **changed),
                       asyn=asyn, kv_events=config_of(trace).get("kv_events", False))
    except AssertionError:
        return False
    return True


def test_the_cases_cover_the_knobs() -> None:
    cfgs = [config_of(t) for t in SCHED + OFFLOAD]
    assert {c.get("hash_algo") for c in cfgs} - {None} == {"sha256", "sha256_cbor", "xxhash",
                                                             "xxhash_cbor"}
    assert sum(not c.get("enable_prefix_caching", True) for c in cfgs) >= 4
    assert any(c.get("max_num_active_seqs") for c in cfgs)
    assert any(c.get("long_prefill_token_threshold_adaptive") for c in cfgs)
    assert any(c.get("groups") for c in cfgs) and any(_asyn(t) for t in SCHED)
    assert any("kv_offloading_size_chunks" in c and not c.get("enable_prefix_caching", True)
               for c in cfgs)
    assert {c.get("prefix_cache_retention_interval", 0) for c in cfgs} >= {0, None, 4, 16, 32}


@pytest.mark.parametrize(("trace", "asyn"), RUNS,
                         ids=[f"{t.name.split('.')[0]}{'-async' if a else ''}" for t, a in RUNS])
def test_scheduler_case(trace: Path, asyn: bool) -> None:
    assert _matches(trace, asyn)


@pytest.mark.parametrize("trace", OFFLOAD, ids=lambda t: t.name.split(".")[0])
def test_cpu_tier_case(trace: Path) -> None:
    """Prefix caching off with a CPU tier: requests are hashed for the connector alone, and a
    chunk another request loads does not defer a lookup (kvcli refused the combination)."""
    assert not config_of(trace)["enable_prefix_caching"]
    offload_cases.test_offload_case(trace, "expected", _asyn(trace))


@pytest.mark.parametrize(("case", "changed"), [
    ("kseed8006", {"hash_seed": "vllm-none-hash"}),     # xxhash_cbor's event hashes
    ("kaseed8046", {"hash_seed": "vllm-none-hash"}),    # xxhash's
    ("khseed8099", {"hash_algo": "sha256"}),             # sha256_cbor's
    ("kseed8006", {"long_prefill_token_threshold_adaptive": True}),
    ("kseed8009", {"long_prefill_token_threshold_adaptive": False}),
    ("kseed8009", {"max_num_active_seqs": None}),
    ("khaseed8111", {"max_num_active_seqs": None}),
    ("kaseed8057", {"enable_prefix_caching": True}),
    ("kseed8021", {"enable_prefix_caching": False}),
    # Mamba groups (align mode): Jamba's layout, Mamba2's with checkpoints
    ("kmseed8508", {"max_num_active_seqs": None}),
    ("kmseed8508", {"long_prefill_token_threshold_adaptive": True}),
    ("kmseed8534", {"hash_seed": "vllm-none-hash"}),
    ("km2seed8568", {"max_num_active_seqs": None}),
    # prefix caching off: vLLM's "none" Mamba mode, a block of max_model_len tokens a request
    ("nkmseed8531", {"enable_prefix_caching": True}),
    ("nkm2seed8547", {"enable_prefix_caching": True}),
    # a sliding-window group's retention: periodic, dense, or only what a hit can use
    ("rhseed8307", {"prefix_cache_retention_interval": 0}),     # 16
    ("rhaseed8356", {"prefix_cache_retention_interval": 64}),   # 32
    ("rhseed8324", {"prefix_cache_retention_interval": 0}),     # dense
    ("rhaseed8396", {"prefix_cache_retention_interval": None}),  # 0
    ("xrhseed8432", {"prefix_cache_retention_interval": 0}),    # 4, blocks of 2
])
def test_each_knob_matters(case: str, changed: dict) -> None:
    trace = DATA / f"{case}.trace.jsonl"
    assert _matches(trace)
    assert not _matches(trace, **changed)


# The CPU tier under the scheduler's options (`offload_fresh/make_traces.py --knobs`, kos...):
# the priority policy, a watermark, scheduler_reserve_full_isl, max_num_active_seqs, the adaptive
# threshold, prefix caching off; each case matches there (test_offload_replay), and not changed.
@pytest.mark.parametrize(("case", "changed"), [
    ("koseed9009", {"policy": "fcfs"}),                  # caching off, 6 flushes
    ("koseed9009", {"watermark": 0.0}),                  # 0.05
    ("koseed9009", {"enable_prefix_caching": True}),
    ("koseed9003", {"max_num_active_seqs": None}),       # 1
    ("koseed9003", {"long_prefill_token_threshold_adaptive": False}),
    ("koaseed9033", {"scheduler_reserve_full_isl": True}),
    ("koaseed9033", {"watermark": 0.0}),
    ("koaseed9049", {"policy": "fcfs"}),                 # async, caching off, 9 failed offers
    ("koaseed9049", {"long_prefill_token_threshold_adaptive": False}),
    ("koalseed9079", {"max_num_active_seqs": None}),     # 3, outputs to 200 tokens
    ("koalseed9079", {"scheduler_reserve_full_isl": False}),
])
def test_each_knob_matters_with_a_cpu_tier(case: str, changed: dict) -> None:
    trace = DATA.parent / "offload_fresh" / f"{case}.trace.jsonl"
    asyn = _asyn(trace)
    offload_cases.test_offload_case(trace, "expected", asyn)
    with pytest.raises(AssertionError):
        offload_cases.test_offload_case(trace, "expected", asyn, **changed)


def test_xxhash_events_without_a_seed_are_said_to_match_no_server(tmp_path: Path) -> None:
    trace = DATA / "kseed8006.trace.jsonl"
    said = ("event hashes: vLLM seeds xxhash_cbor at random unless PYTHONHASHSEED is set, so no "
            "server's hashes are these; give its PYTHONHASHSEED as hash_seed")
    base = {"arrivals": "step", "async_scheduling": False}
    seeded = replay(str(trace), ReplayOptions(**base), VllmEvents(io.BytesIO()))
    unseeded = replay(str(trace), ReplayOptions(**base, hash_seed=None,
                                                given=frozenset({*base, "hash_seed"})),
                      VllmEvents(io.BytesIO()))
    without_events = replay(str(trace), ReplayOptions(**base, hash_seed=None,
                                                      given=frozenset({*base, "hash_seed"})))
    assert said not in seeded.warnings and seeded.config["hash_seed"] == "0"
    assert said in unseeded.warnings and "hash_seed" not in unseeded.config
    assert said not in without_events.warnings
