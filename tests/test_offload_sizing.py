"""The CPU tier sized in GiB over odd KV geometries, as vLLM 0.33 runs it (`data/offload_sizing/`).

Each case gives `kv_offloading_size` in GiB (as `vllm serve --kv-offloading-size`), a KV geometry
(layers, KV heads, head size, dtype incl. fp8), a GPU block size and an offload block size; the
real `Scheduler` + `OffloadingConnector` answered it (`oracle sched_offload`, README there).
Matched cases, and the three things the campaign found: a hit no chunk of its load covers is
`external_unspecified` (vLLM's `get_external_cache_hit_sources`); a size under one chunk runs a
tier of 0 chunks; a 1-token prompt whose token is a whole chunk loads for ever (refused).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import test_offload_replay as TO
from oracle_sched import answer_of

from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay
from kvcore.errors import InputError

DATA = Path(__file__).parent / "data" / "offload_sizing"
# whole answers: matched as drawn (17, 66, 174, 272; gl98: --long, chunked prefill off), and
# the regressions (121, 269: hits by source; 57: a tier of 0 chunks)
WHOLE = ["gs17", "gs66", "gs174", "gs272", "gl98", "gs121", "gs269", "gs57"]
# vLLM loads a 1-token prompt's chunk for ever: the oracle's first 150 steps (--max-steps)
ENDLESS = ["gs110", "gs279"]


def _async(trace: Path) -> bool:
    return bool(json.loads(trace.open().readline())["config"].get("async_scheduling"))


@pytest.mark.parametrize("name", WHOLE)
def test_sized_in_gib_as_vllm(name: str) -> None:
    trace = DATA / f"{name}.trace.jsonl"
    TO.test_offload_case(trace, "expected", _async(trace))


def test_the_sizes_drawn() -> None:
    """vLLM's chunk count from GiB: int(GiB x 2^30) // the chunk's bytes rounded up to 4 KiB."""
    for name in WHOLE:
        trace = DATA / f"{name}.trace.jsonl"
        cfg = json.loads(trace.open().readline())["config"]
        eff = answer_of(trace)[-1]["summary"]["config"]["_effective"]
        assert eff["cpu_num_chunks"] == int(cfg["kv_offloading_size"] * 2**30) // \
            eff["kv_bytes_per_chunk"], name


def test_hits_no_chunk_covers_are_unspecified() -> None:
    """A 1-token prompt loads its chunk again into the GPU block it holds, hashed already: no
    chunk of that load covers the hit (offloading/scheduler.py:1404-1413), so vLLM counts it
    `external_unspecified` (1318-1345)."""
    for name in ("gs121", "gs269"):
        trace = DATA / f"{name}.trace.jsonl"
        stats = answer_of(trace)[-1]["summary"]["connector_prefix_cache_stats"]
        assert stats["hits_by_source"] == {"host": 2, "external_unspecified": 3}
        s = replay(str(trace), ReplayOptions(arrivals="step", async_scheduling=True))
        got = s.offload["connector_prefix_cache_stats"]["hits_by_source"]
        assert list(got.items()) == list(stats["hits_by_source"].items())


def test_a_size_under_one_chunk_runs_an_empty_tier() -> None:
    """vLLM 0.33 runs a tier of 0 chunks (every store fails); kvcli warns and runs it too."""
    trace = DATA / "gs57.trace.jsonl"
    warned: list[str] = []
    s = replay(str(trace), ReplayOptions(arrivals="step", async_scheduling=False),
               warn=warned.append)
    assert s.offload["cpu_num_chunks"] == 0
    assert s.offload["alloc_failures"] == s.offload["store_offers"] > 0
    assert any("holds no chunk" in w and "0 chunks" in w for w in warned), warned


@pytest.mark.parametrize("name", ENDLESS)
def test_a_one_token_chunk_reloads_for_ever(name: str) -> None:
    """vLLM leaves a fully loaded 1-token prompt 0 computed tokens (scheduler.py:3515-3516),
    looks it up anew (1110) and loads it again, as long as its chunk stays: kvcli steps as
    vLLM does (the oracle's first 150 steps), then, with nothing left to run or arrive,
    refuses the trace in one line."""
    trace = DATA / f"{name}.trace.jsonl"
    asyn = _async(trace)
    lines = [e for e in answer_of(trace) if "step" in e and not e.get("idle")]
    out = io.BytesIO()
    replay(str(trace), ReplayOptions(arrivals="step", async_scheduling=asyn, max_steps=150),
           steps_out=out)
    ours = {d["step"]: d for d in map(json.loads, out.getvalue().splitlines()) if "step" in d}
    keys = TO.STEP_KEYS + (TO.STEP_KEYS_ASYNC if asyn else ())
    for e in lines:
        assert {k: ours[e["step"]][k] for k in keys if k in e} == \
            {k: e[k] for k in keys if k in e}, e["step"]
    assert sum(len(e["load_jobs"]) for e in lines[-20:]) > 0    # still loading at step 150
    with pytest.raises(InputError) as err:
        replay(str(trace), ReplayOptions(arrivals="step", async_scheduling=asyn))
    assert err.value.field == "offload_block_size"
    assert "1-token prompt" in err.value.message and "\n" not in err.value.message
