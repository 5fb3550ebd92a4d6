"""Engine replay with a CPU tier = vLLM 0.33's Scheduler + OffloadingConnector, step for step.

Each case is a token-id trace whose config line carries the offload keys, answered by the
oracle's `sched_offload` (the real Scheduler, OffloadingConnectorScheduler and
CPUOffloadingManager with a fake worker): the six recorded cases (`data/offload_cases/`) and
our random ones (`data/offload_fresh/`, `make_traces.py`). Replayed with `--arrivals step`, our
step lines must carry the oracle's keys with the same values on every step the engine took
(scheduled, admitted, preempted, finished, free blocks, lookups, deferrals, jobs with their
blocks, slots and keys, offers, flushes, completions, evictions, failures, CPU occupancy); the
request lines the same hits per lookup; the summary's `offload` object and connector stats the
same totals; and with `kv_events` vLLM's event batches, GPU and CPU medium (the CPU
`BlockStored` events of one store job compared as a set: vLLM iterates a set there).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_sched import (
    answer_of,
    assert_prefix_cache_stats,
    assert_same_steps,
    config_of,
    replay_case,
)

from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay
from kvcore.errors import InputError

DATA = Path(__file__).parent / "data"
RECORDED = sorted((DATA / "offload_cases").glob("*.trace.jsonl"))
# (trace, answer kind, async): the recorded cases both ways, our random ones as drawn
CASES = ([(t, "expected", False) for t in RECORDED]
         + [(t, "async.expected", True) for t in RECORDED]
         + [(t, "expected", False) for pattern in ("oseed*", "olseed*", "koseed*", "kolseed*")
            for t in sorted((DATA / "offload_fresh").glob(f"{pattern}.trace.jsonl"))]
         + [(t, "expected", True) for pattern in ("oaseed*", "oalseed*", "koaseed*", "koalseed*")
            for t in sorted((DATA / "offload_fresh").glob(f"{pattern}.trace.jsonl"))])
STEP_KEYS_ASYNC = ("num_free_blocks_after_schedule", "processed", "schedule_called")
STEP_KEYS = ("step", "scheduled", "admitted", "preempted", "finished", "num_free_blocks",
             "lookups", "lookup_deferred", "waiting_for_kv", "load_jobs", "store_offers",
             "store_jobs", "flushed", "load_done", "store_done", "recv_done", "chunks_loaded",
             "chunks_stored", "cpu_evicted", "cpu_alloc_failures", "cpu_used", "cpu_pending",
             "cpu_pinned")


def _events(batch: list[dict]) -> list:
    """A batch with each run of CPU `BlockStored` events as a sorted list (set order)."""
    out: list = []
    run: list[str] = []
    for e in batch:
        if e["type"] == "BlockStored" and e["medium"] == "CPU":
            run.append(json.dumps(e, sort_keys=True))
            continue
        if run:
            out.append(sorted(run))
            run = []
        out.append(e)
    if run:
        out.append(sorted(run))
    return out


@pytest.mark.parametrize(("trace", "kind", "asyn"), CASES,
                         ids=[f"{t.name.split('.')[0]}{'-async' if a else ''}"
                              for t, _, a in CASES])
def test_offload_case(trace: Path, kind: str, asyn: bool, **changed) -> None:
    """(``changed``: options over the config line's, for the knob cases' mutation rows.)"""
    given = {"given": frozenset({"arrivals", "async_scheduling", *changed})} if changed else {}
    s, ours, by_id, events = replay_case(trace, async_scheduling=asyn, **given, **changed)
    expected = answer_of(trace, kind)
    summary = expected[-1]["summary"]
    lines = [e for e in expected[:-1] if not e.get("idle")]
    keys = STEP_KEYS + (STEP_KEYS_ASYNC if asyn else ())
    assert_same_steps(ours, lines, keys)
    for r in summary["requests"]:
        o = by_id[r["id"]]
        assert (o["hit_tokens"], o["gpu_hit_tokens"], o["cpu_hit_tokens"], o["lookups"],
                o["first_scheduled_step"], o["finish_step"]) == \
            (r["num_cached_tokens"], r["gpu_hit_tokens"], r["cpu_hit_tokens"], r["lookups"],
             r["first_scheduled_step"], r["finish_step"]), r["id"]
    theirs = summary["offload"]
    assert {k: s.offload[k] for k in theirs} == theirs
    assert s.offload["connector_prefix_cache_stats"] == summary["connector_prefix_cache_stats"]
    assert s.offload["cpu_num_chunks"] == summary["config"]["_effective"]["cpu_num_chunks"]
    # (vLLM's counter sums its ranks' reports, each pipeline stage moving its own layers;
    # kvcli counts one rank's bytes: tests/data/offload_pp/DESIGN.md)
    ranks = config_of(trace).get("pipeline_parallel_size", 1)
    assert s.offload["bytes_loaded"] * ranks == summary["kv_connector_stats"].get(
        "kv_offload_load_bytes", 0)
    assert s.steps == summary["num_steps"]
    assert_prefix_cache_stats(s, summary)
    if config_of(trace).get("kv_events"):
        assert [_events(b) for b in events] == \
            [_events(e["events"]) for e in lines if e.get("events")]


def test_the_cases_cover_the_tier() -> None:
    """The fixtures hit every path worth testing (else a regenerated set lost one)."""
    totals: dict[str, int] = {}
    for t, kind, _ in CASES:
        off = answer_of(t, kind)[-1]["summary"]["offload"]
        for k in ("cpu_hit_tokens", "lookup_deferrals", "alloc_failures", "flushed_jobs",
                  "cpu_evictions"):
            totals[k] = totals.get(k, 0) + off[k]
    assert all(totals.values()), totals
    cfgs = [config_of(t) for t, _, _ in CASES]
    assert any(c.get("eviction_policy") == "arc" for c in cfgs)
    assert any(c.get("store_threshold") == 2 for c in cfgs)
    assert any(c.get("offload_prompt_only") is False for c in cfgs)
    assert any(c.get("offload_block_size", 0) >= 4 * c.get("block_size", 16) for c in cfgs)


def test_without_a_tier_nothing_changes(tmp_path: Path) -> None:
    """No offload keys anywhere when the tier is off (outputs byte-identical to before)."""
    trace = DATA / "sched_cases" / "a_shared_prefix.trace.jsonl"
    s = replay(str(trace), ReplayOptions(arrivals="step", async_scheduling=False))
    d = s.to_dict()
    assert "offload" not in d and "kv_offloading_size" not in d["config"]


def test_sizes_from_gib_as_vllm() -> None:
    # Llama-3-8B geometry: 2 MiB a block of 16; 1 GiB = 512 chunks of one block, 128 of four
    trace = DATA / "sched_cases" / "a_shared_prefix.trace.jsonl"
    for gib, obs, chunks in ((1.0, None, 512), (1.0, 64, 128), (0.5, 32, 128)):
        s = replay(str(trace), ReplayOptions(arrivals="step", async_scheduling=False,
                                             kv_offloading_size=gib, offload_block_size=obs,
                                             given=frozenset({"kv_offloading_size",
                                                              "offload_block_size"})))
        assert s.offload["cpu_num_chunks"] == chunks


@pytest.mark.parametrize(("opts", "field", "words"), [
    ({"offload_block_size": 24}, "offload_block_size", "multiple of the block size 16"),
    ({"kv_offloading_size": 0.0}, "kv_offloading_size", "> 0"),
    ({"kv_offloading_size_chunks": 4}, "kv_offloading_size_chunks", "not both"),
    ({"offload_bandwidth_gbps": -1.0}, "offload_bandwidth_gbps", ">= 0.001"),
])
def test_bad_tier_options(opts: dict, field: str, words: str) -> None:
    trace = DATA / "sched_cases" / "a_shared_prefix.trace.jsonl"
    kw = {"arrivals": "step", "async_scheduling": False, "kv_offloading_size": 1.0, **opts}
    with pytest.raises(InputError) as e:
        replay(str(trace), ReplayOptions(**kw, given=frozenset(kw)))
    assert e.value.field == field and words in e.value.message


def test_model_geometry_and_the_config_command() -> None:
    """Bytes per block from a model (Llama-3.1-8B: 2 MiB a 16-token block), and `kvcli config
    --kv-offloading-size` sizes the tier as the replay does."""
    from typer.testing import CliRunner

    from kvcli.app import app

    trace = DATA / "sched_cases" / "a_shared_prefix.trace.jsonl"
    opts = {"arrivals": "step", "async_scheduling": False, "kv_offloading_size": 16.0,
            "model": "llama-3.1-8b", "num_blocks": 64}
    s = replay(str(trace), ReplayOptions(**opts, given=frozenset(opts)))
    assert (s.offload["kv_bytes_per_block"], s.offload["cpu_num_chunks"]) == (2 << 20, 8192)
    r = CliRunner().invoke(app, ["config", "llama-3.1-8b", "--gpu-memory-gib", "80",
                                 "--kv-offloading-size", "16", "--kv-offloading-block-size",
                                 "64", "--json"])
    assert r.exit_code == 0, r.output
    tier = json.loads(r.stdout)["cpu_offload"]
    assert (tier["cpu_num_chunks"], tier["tokens_per_chunk"], tier["kv_bytes_per_chunk"],
            tier["cpu_kv_cache_size_tokens"]) == (2048, 64, 8 << 20, 131072)
    assert repr(tier["cpu_bytes_to_use"]) == repr(16 << 30)     # bytes, an integer (was 1.7e10)
    r = CliRunner().invoke(app, ["config", "llama-3.1-8b", "--gpu-memory-gib", "80",
                                 "--kv-offloading-size", "16", "--kv-offloading-block-size",
                                 "24"])
    assert r.exit_code == 2 and "--kv-offloading-block-size" in r.output


def test_transfers_on_the_clock_take_bytes_over_bandwidth() -> None:
    """On the simulated clock a slower host link makes the same loads wait longer."""
    trace = DATA / "offload_cases" / "gpu_small_cpu_return.trace.jsonl"
    waits = []
    for gbps in (64.0, 0.05):
        opts = {"arrivals": "ignore", "async_scheduling": False, "offload_bandwidth_gbps": gbps}
        s = replay(str(trace), ReplayOptions(**opts, given=frozenset(opts)))
        w = s.offload["load_wait_steps"]
        assert w["count"] > 0
        waits.append(w["p50"])
    # 2 MiB a block over 64 GB/s is 0.03 ms: done within the step (reported at its end, the
    # request computes the next step); over 0.05 GB/s it is 42 ms, several 5 ms steps
    assert waits[0] == 1 and waits[1] > 5


def _a_b_a(tmp_path: Path) -> Path:
    """Documents A and B (64 tokens each, 4 blocks of 16), then A again."""
    a = list(range(1, 65))
    b = list(range(1001, 1065))
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps({"id": i, "prompt_token_ids": p, "output_length": 1})
                             + "\n" for i, p in (("A", a), ("B", b), ("A2", a))))
    return trace


def test_cache_mode_has_a_cpu_level(tmp_path: Path) -> None:
    """Cache mode: a document the GPU lost comes back from the CPU tier, whole prompt (no T-1
    cap), when the tier kept it; with a tier too small for two documents LRU evicted it."""
    trace = _a_b_a(tmp_path)
    got = {}
    for chunks in (8, 4):
        opts = {"mode": "cache", "num_blocks": 5, "kv_offloading_size_chunks": chunks}
        s = replay(str(trace), ReplayOptions(**opts, given=frozenset(opts)))
        got[chunks] = (s.hit_tokens, s.offload["counted_cpu_hit_tokens"],
                       s.offload["chunks_stored"], s.offload["cpu_evictions"],
                       s.offload["chunks_loaded"])
    # 8 chunks: A and B stored (4 + 4), A2 loads its 4; 4 chunks: B's store evicts A's 4 and
    # A2 misses both levels, then stores its 4 again (evicting B's)
    assert got == {8: (0, 64, 8, 0, 4), 4: (0, 0, 12, 8, 0)}


@pytest.mark.parametrize("trace", RECORDED, ids=lambda p: p.name.split(".")[0])
def test_stats_reads_the_tier_from_our_stream(trace: Path, tmp_path: Path) -> None:
    """`kvcli stats` on the stream of a replay with the tier: its `cpu_tier` section agrees
    with the replay's own `offload` totals, and the GPU side still matches the summary."""
    from kvcore.analysis.stats import stats_from_lines
    from kvcore.engine.events import JsonlEvents

    path = tmp_path / "ev.jsonl"
    with open(path, "wb") as f:
        s = replay(str(trace), ReplayOptions(arrivals="step", async_scheduling=False),
                   JsonlEvents(f))
    lines = path.read_bytes().splitlines()
    report = stats_from_lines(str(path), lines[0], iter(lines[1:]))
    cpu, off = report["cpu_tier"], s.offload
    assert (cpu["cpu_hit_tokens"], cpu["chunks_loaded"], cpu["chunks_stored"],
            cpu["cpu_evictions"], cpu["failed_offers"], cpu["max_resident_chunks"],
            cpu["resident_chunks_end"], cpu["loads"], cpu["stores"]) == \
        (off["counted_cpu_hit_tokens"], off["chunks_loaded"], off["chunks_stored"],
         off["cpu_evictions"], off["alloc_failures"], off["max_cpu_used"], off["cpu_used_end"],
         off["load_jobs"], off["store_jobs"])
    assert cpu["hit_rate_with_cpu"] == off["hit_rate_with_cpu"]
    assert report["source"]["summary_mismatches"] == {}


def test_miss_reasons_with_the_tier(tmp_path: Path) -> None:
    """With a tier the GPU's misses split: served by the tier (`cpu_tier`), or evicted from
    both (`evicted_both`); the cache-mode story of `test_cache_mode_has_a_cpu_level`."""
    from kvcore.analysis.stats import stats_from_lines
    from kvcore.engine.events import JsonlEvents

    trace = _a_b_a(tmp_path)
    got = {}
    for chunks in (8, 4):
        path = tmp_path / f"ev{chunks}.jsonl"
        opts = {"mode": "cache", "num_blocks": 5, "kv_offloading_size_chunks": chunks}
        with open(path, "wb") as f:
            replay(str(trace), ReplayOptions(**opts, given=frozenset(opts)), JsonlEvents(f))
        lines = path.read_bytes().splitlines()
        tokens = stats_from_lines(str(path), lines[0], iter(lines[1:]))["misses"]["tokens"]
        got[chunks] = {k: v for k, v in tokens.items() if v}
    # A and B: cold; A2: its 4 blocks served by the tier, or (tier of 4) evicted from both
    assert got == {8: {"cold": 128, "cpu_tier": 64}, 4: {"cold": 128, "evicted_both": 64}}
