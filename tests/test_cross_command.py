"""Two commands answering the same question give the same numbers, through the command line:
`kvcli cluster --replicas 1` and `kvcli replay` (the whole summary, its `config` included),
`kvcli config` and the pool a replay sizes from the same model and memory, a `kvcli curve`
point and `kvcli replay --mode cache` at that capacity, `kvcli stats` of a replay's events with
a warm-up and the replay's own summary. (Event streams line by line: `test_cluster.py`; a sweep
job and `kvcli replay`: `test_sweep_cli.py`.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

runner = CliRunner()
TRACES = Path(__file__).resolve().parents[1] / "traces"
PREFIX = str(TRACES / "shared-prefix.jsonl")
CHAT = str(TRACES / "multiturn-chat.jsonl")


def kvcli_json(*args) -> dict:
    r = runner.invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _small(tmp_path, n=12) -> str:
    """Prompts of 40-70 tokens sharing a 32-token head: any model's pool below holds them."""
    path = tmp_path / "small.jsonl"
    path.write_text("".join(json.dumps({"prompt_token_ids": list(range(32)) + [1000 + 50 * i + k
                                                                              for k in range(8 + 3 * i)],
                                        "output_length": 4, "timestamp": 5.0 * i}) + "\n"
                            for i in range(n)))
    return str(path)


# (model, GiB): one full-attention group, sliding windows 5:1, sliding windows 1:1
MODELS = [("llama-3.1-8b", "40"), ("gemma-3-27b", "80"), ("gpt-oss-20b", "40")]


@pytest.mark.parametrize(("model", "gib"), MODELS)
def test_config_sizing_is_the_pool_replay_and_cluster_use(tmp_path, model, gib):
    trace = _small(tmp_path)
    sized = kvcli_json("config", model, "--gpu-memory-gib", gib)
    flags = ["--model", model, "--gpu-memory-gib", gib]
    alone = kvcli_json("replay", trace, *flags)
    one = kvcli_json("cluster", trace, "--replicas", "1", *flags)
    assert sized["num_blocks"] == alone["num_blocks"] == alone["config"]["num_blocks"]
    assert alone["config"]["max_model_len"] == sized["max_model_len"]
    # the cluster reports what its replicas run, as the replay does (it said null, the options
    # before the model sized them)
    assert one["config"] == alone["config"]
    assert one["config"]["num_blocks"] == sized["num_blocks"]


def test_one_replica_cluster_is_the_replay_on_a_shipped_trace_with_a_warmup():
    flags = ["--num-blocks", "160", "--warmup", "0.25"]
    alone = kvcli_json("replay", PREFIX, *flags)
    one = kvcli_json("cluster", PREFIX, "--replicas", "1", "--routers", "llmd,dynamo", *flags)
    assert alone["preemptions"] > 0 and alone["evictions"] > 0 and alone["warmup_requests"] == 32
    assert one["config"] == alone["config"]
    for r in one["routers"]:
        for key in ("hit_rate", "hit_tokens", "prompt_tokens", "counted_requests",
                    "request_hit_rate_mean", "preemptions", "evictions", "rejected",
                    "sim_time_s", "latency"):
            assert r[key] == alone[key], (r["router"], key)
        rep = r["replicas"][0]
        for key in ("requests", "peak_usage", "mean_usage", "steps"):
            assert rep[key] == alone[key], (r["router"], key)


def test_curve_points_are_cache_mode_replays_at_capacity_plus_the_null_block():
    """One point below the largest request (a real replay: some rejected) and one the one
    pass computes; the curve counts rejected prompts as missed, the replay leaves them out of
    its hit rate (both documented): tokens and rejections agree."""
    doc = kvcli_json("curve", CHAT, "--capacities", "100,1000", "--warmup", "0.3")
    methods = {p["capacity_blocks"]: p["method"] for p in doc["points"]}
    assert methods == {100: "replay", 1000: "one-pass"}
    for p in doc["points"]:
        c = p["capacity_blocks"]
        alone = kvcli_json("replay", CHAT, "--mode", "cache", "--num-blocks", str(c + 1),
                           "--warmup", "0.3")
        assert p["hit_tokens"] == alone["hit_tokens"], c
        assert p["prompt_tokens"] - p["rejected_tokens"] == alone["prompt_tokens"], c
        assert p["rejected"] == alone["rejected"], c
    assert doc["points"][0]["rejected"] > 0


@pytest.mark.parametrize("mode", ["engine", "cache"])
def test_stats_of_the_events_equal_the_replay_with_a_warmup(tmp_path, mode):
    events = tmp_path / "ev.jsonl"
    alone = kvcli_json("replay", PREFIX, "--mode", mode, "--num-blocks", "150", "--warmup",
                       "0.4", "--events", str(events))
    r = kvcli_json("stats", str(events))
    assert alone["warmup_requests"] == 51 and alone["evictions"] > 0
    assert (r["reuse"]["hit_tokens"], r["reuse"]["prompt_tokens"], r["reuse"]["hit_rate"]) == \
        (alone["hit_tokens"], alone["prompt_tokens"], alone["hit_rate"])
    assert r["reuse"]["request_hit_rate_mean"] == pytest.approx(alone["request_hit_rate_mean"],
                                                                rel=1e-12)
    assert r["eviction"]["evictions"] == alone["evictions"]
    assert r["preemption"]["preemptions"] == alone["preemptions"]
    assert r["memory"]["peak_usage"] == alone["peak_usage"]
    assert r["memory"]["usable_blocks"] == alone["num_blocks"] - 1
    assert r["source"]["summary_mismatches"] == {}


def test_stats_time_is_the_replays_when_late_arrivals_are_rejected(tmp_path):
    """Two requests arrive after the engine's last step and are refused (prompts past
    max_model_len): their events carry the step that would have run next, at their own times.
    `kvcli stats` took its simulated time from that step's first event, 5,000 ms, against the
    replay's 10 s (and its evictions per minute from it)."""
    trace = tmp_path / "late.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in (
        {"prompt_token_ids": list(range(40)), "output_length": 3, "timestamp": 0},
        {"prompt_token_ids": list(range(200)), "output_length": 3, "timestamp": 5000},
        {"prompt_token_ids": list(range(300)), "output_length": 3, "timestamp": 10000})))
    events = tmp_path / "ev.jsonl"
    alone = kvcli_json("replay", str(trace), "--num-blocks", "20", "--max-model-len", "100",
                       "--skip-bad", "--events", str(events))
    r = kvcli_json("stats", str(events))
    assert (alone["rejected"], alone["steps"], alone["sim_time_s"]) == (2, 6, 10.0)
    assert r["source"]["sim_time_ms"] == 10000.0
    # the refusals' step, 6, never ran: documented, `steps` is the stream's last step + 1
    assert r["source"]["steps"] == 7
