"""vLLM's Prometheus metrics from a replay (docs/live.md): names, types, labels and buckets as
vLLM 0.33 defines them; snapshots that parse with prometheus_client and end at the summary."""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.live.metric_defs import (
    INTER_TOKEN_LATENCY,
    METRICS,
    OFFLOAD_METRICS,
    REQUEST_LATENCY,
    STORES_SKIPPED,
    TIME_TO_FIRST_TOKEN,
    request_tokens_buckets,
)

ROOT = Path(__file__).resolve().parents[1]
TRACE = str(ROOT / "traces" / "shared-prefix.jsonl")
runner = CliRunner()
E = ["model_name", "engine"]

# From vLLM 0.33's source: vllm/v1/metrics/loggers.py (PrometheusStatLogger), and
# vllm/distributed/kv_transfer/kv_connector/v1/offloading/metrics.py for the CPU tier.
VLLM = {
    "vllm:num_requests_running": ("gauge", E),
    "vllm:num_requests_waiting": ("gauge", E),
    "vllm:kv_cache_usage_perc": ("gauge", E),
    "vllm:prefix_cache_queries": ("counter", E),
    "vllm:prefix_cache_hits": ("counter", E),
    "vllm:external_prefix_cache_queries": ("counter", E),
    "vllm:external_prefix_cache_hits": ("counter", E),
    "vllm:num_preemptions": ("counter", E),
    "vllm:prompt_tokens": ("counter", E),
    "vllm:generation_tokens": ("counter", E),
    "vllm:request_success": ("counter", E + ["finished_reason"]),
    "vllm:request_prompt_tokens": ("histogram", E),
    "vllm:request_generation_tokens": ("histogram", E),
    "vllm:time_to_first_token_seconds": ("histogram", E),
    "vllm:inter_token_latency_seconds": ("histogram", E),
    "vllm:request_time_per_output_token_seconds": ("histogram", E),
    "vllm:e2e_request_latency_seconds": ("histogram", E),
    "vllm:request_queue_time_seconds": ("histogram", E),
    "vllm:request_inference_time_seconds": ("histogram", E),
    "vllm:request_prefill_time_seconds": ("histogram", E),
    "vllm:request_decode_time_seconds": ("histogram", E),
    "vllm:request_num_preemptions": ("histogram", E),
}
VLLM_OFFLOAD = {
    "vllm:kv_offload_total_bytes": ("counter", E + ["transfer_type"]),
    "vllm:kv_offload_total_time": ("counter", E + ["transfer_type"]),
    "vllm:kv_offload_size": ("histogram", E + ["transfer_type"]),
    "vllm:kv_offload_cpu_cache_usage_perc": ("gauge", E),
    "vllm:kv_offload_cpu_cache_write_usage_perc": ("gauge", E),
    "vllm:kv_offload_cpu_cache_read_usage_perc": ("gauge", E),
    "vllm:kv_offload_cpu_allocation_size": ("histogram", E),
    "vllm:kv_offload_load_bytes": ("counter", E),
    "vllm:kv_offload_load_time": ("counter", E),
    "vllm:kv_offload_load_size": ("histogram", E),
    "vllm:kv_offload_store_bytes": ("counter", E),
    "vllm:kv_offload_store_time": ("counter", E),
    "vllm:kv_offload_store_size": ("histogram", E),
    # (vLLM's lookup_sync_delay_seconds is not exported: wall-clock of one call, docs/live.md)
    "vllm:kv_offload_lookup_async_delay_seconds": ("histogram", E),
    "vllm:kv_offload_allocation_failure": ("counter", E),
    "vllm:kv_offload_config_info": ("gauge", E + ["cpu_num_chunks", "cpu_blocks_per_chunk",
                                                  "cpu_kv_cache_size_bytes",
                                                  "cpu_kv_cache_size_tokens"]),
}
# with a store_threshold of 2 or more (v1/kv_offload/cpu/spec.py)
VLLM_STORES_SKIPPED = ("vllm:kv_offload_stores_skipped", "counter", E)
# vllm/v1/metrics/buckets.py
VLLM_BUCKETS = {
    "vllm:time_to_first_token_seconds": [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25,
                                         0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
                                         160.0, 640.0, 2560.0],
    "vllm:inter_token_latency_seconds": [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
                                         0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0],
    "vllm:e2e_request_latency_seconds": [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0,
                                         20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
                                         960.0, 1920.0, 7680.0],
    "vllm:request_num_preemptions": [1, 2, 3, 4, 5, 10, 20],
}


def test_definitions_are_vllms():
    ours = {name: (kind, ["model_name", "engine", *extra]) for name, kind, _, extra, _ in METRICS}
    assert ours == VLLM
    assert {n: (k, ["model_name", "engine", *x]) for n, k, _, x, _ in OFFLOAD_METRICS} == \
        VLLM_OFFLOAD
    name, kind, _, extra, _ = STORES_SKIPPED
    assert (name, kind, ["model_name", "engine", *extra]) == VLLM_STORES_SKIPPED
    assert list(TIME_TO_FIRST_TOKEN) == VLLM_BUCKETS["vllm:time_to_first_token_seconds"]
    assert list(INTER_TOKEN_LATENCY) == VLLM_BUCKETS["vllm:inter_token_latency_seconds"]
    assert list(REQUEST_LATENCY) == VLLM_BUCKETS["vllm:e2e_request_latency_seconds"]
    assert request_tokens_buckets(100) == (1, 2, 5, 10, 20, 50, 100)   # build_1_2_5_buckets


def snapshots(text: str) -> list[tuple[float, dict]]:
    """[(sim_time_s, {family name: family})] of a --metrics file."""
    out = []
    for chunk in text.split("# kvcli snapshot sim_time_s=")[1:]:
        head, _, body = chunk.partition("\n")
        out.append((float(head), {f.name: f for f in text_string_to_metric_families(body)}))
    return out


def value(fam, sample: str, **labels) -> float:
    return next(s.value for s in fam.samples if s.name == sample
                and all(s.labels.get(k) == v for k, v in labels.items()))


def test_snapshots_parse_and_end_at_the_summary(tmp_path):
    out = tmp_path / "m.prom"
    r = runner.invoke(app, ["replay", TRACE, "--num-blocks", "96", "--metrics", str(out),
                            "--metrics-interval-s", "5", "--json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    snaps = snapshots(out.read_text())
    times = [t for t, _ in snaps]
    assert times == sorted(times) and times[:3] == [5.0, 10.0, 15.0]
    assert times[-1] == round(s["sim_time_s"], 6) and len(snaps) == s["live"]["metrics_snapshots"]
    for t, fams in snaps:           # every sample stamped with its snapshot's simulated time
        stamps = {smp.timestamp for f in fams.values() for smp in f.samples}
        assert len(stamps) == 1 and abs(stamps.pop() - t) <= 0.0005   # (integer ms)
        for name, (kind, labels) in VLLM.items():
            fam = fams[name]
            assert fam.type == kind
            assert all(set(smp.labels) == set(labels) | ({"le"} if smp.name.endswith("_bucket")
                                                         else set()) for smp in fam.samples)
    assert s["preemptions"] > 0 and s["warmup_requests"] == 0
    first, last = snaps[0][1], snaps[-1][1]
    eng = {"engine": "0", "model_name": "kvcli"}
    for name, key in (("vllm:prefix_cache_queries", "prompt_tokens"),
                      ("vllm:prefix_cache_hits", "hit_tokens"),
                      ("vllm:num_preemptions", "preemptions")):
        assert value(last[name], name + "_total", **eng) == s[key]
        assert value(first[name], name + "_total", **eng) < s[key]      # counters grow
    assert value(last["vllm:request_success"], "vllm:request_success_total",
                 finished_reason="length") == s["finished"]
    e2e = last["vllm:e2e_request_latency_seconds"]
    assert value(e2e, "vllm:e2e_request_latency_seconds_count") == s["latency"]["e2e_ms"]["count"]
    assert abs(value(e2e, "vllm:e2e_request_latency_seconds_sum") * 1000
               - s["latency"]["e2e_ms"]["mean"] * s["latency"]["e2e_ms"]["count"]) < 1.0
    buckets = [smp.labels["le"] for smp in e2e.samples if smp.name.endswith("_bucket")]
    assert [float(b) for b in buckets[:-1]] == VLLM_BUCKETS["vllm:e2e_request_latency_seconds"]
    assert value(last["vllm:kv_cache_usage_perc"], "vllm:kv_cache_usage_perc") == 0.0
    assert value(last["vllm:num_requests_running"], "vllm:num_requests_running") == 0.0


def test_offload_metrics_with_the_cpu_tier(tmp_path):
    """0.01 GiB is 5 chunks of 2 MiB: every offer (a prompt is more chunks) fails, no job runs.
    vLLM makes a flat series with its first observation: no transfer series then, the
    failures counted; the deprecated ones exist from the start, at 0 (tests/
    test_offload_metrics.py has the rest)."""
    out = tmp_path / "m.prom"
    r = runner.invoke(app, ["replay", TRACE, "--num-blocks", "96", "--metrics", str(out),
                            "--kv-offloading-size", "0.01", "--json"])
    if r.exit_code == 2 and "kv-offloading-size" in r.stderr:
        raise AssertionError(r.stderr)
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    last = snapshots(out.read_text())[-1][1]
    off = s["offload"]
    assert (off["cpu_num_chunks"], off["store_jobs"], off["alloc_failures"]) == (5, 0, 16512)
    for name in ("vllm:kv_offload_store_bytes", "vllm:kv_offload_load_size"):
        assert last[name].samples == []
    assert value(last["vllm:kv_offload_allocation_failure"],
                 "vllm:kv_offload_allocation_failure_total") == 16512
    for tt in ("CPU_to_GPU", "GPU_to_CPU"):
        assert value(last["vllm:kv_offload_total_bytes"], "vllm:kv_offload_total_bytes_total",
                     transfer_type=tt) == 0
    ext = off["connector_prefix_cache_stats"]
    assert value(last["vllm:external_prefix_cache_hits"],
                 "vllm:external_prefix_cache_hits_total") == ext["hits"]


@pytest.mark.parametrize(("model", "writers"), [("llama-3.1-8b", 2), ("deepseek-v2-lite", 1)])
def test_offload_bytes_sum_the_tp_ranks(tmp_path, model, writers):
    """At --tp 2 each rank moves the summary's `bytes_loaded`; vLLM's aggregator sums its
    workers' stats, so the metric is twice that (it was one rank's). Stores too, except an MLA
    latent's: its one replicated copy is written by rank 0 alone (`offloading/worker.py:55-59`),
    so the metric is one rank's stores (kvcli said twice)."""
    out = tmp_path / "m.prom"
    r = runner.invoke(app, ["replay", TRACE, "--model", model, "--num-blocks", "256",
                            "--max-model-len", "32768", "--tp", "2", "--kv-offloading-size",
                            "1", "--metrics", str(out), "--json"])
    assert r.exit_code == 0, r.output
    off = json.loads(r.stdout)["offload"]
    last = snapshots(out.read_text())[-1][1]
    # a rank's block: 32 layers x 2 x 16 x 4 KV heads x 128 x 2 B; DeepSeek-V2-Lite's latent,
    # 27 layers x 16 x 576 x 2 B, whole on each rank
    assert off["copy_bytes_per_block"] == [{"llama-3.1-8b": 32 * 2 * 16 * 4 * 128 * 2,
                                            "deepseek-v2-lite": 27 * 16 * 576 * 2}[model]]
    assert off["bytes_loaded"] > 0 and off["bytes_stored"] > 0
    assert value(last["vllm:kv_offload_load_bytes"], "vllm:kv_offload_load_bytes_total") == \
        2 * off["bytes_loaded"]
    assert value(last["vllm:kv_offload_store_bytes"], "vllm:kv_offload_store_bytes_total") == \
        writers * off["bytes_stored"] == value(
            last["vllm:kv_offload_total_bytes"], "vllm:kv_offload_total_bytes_total",
            transfer_type="GPU_to_CPU")
    # each rank observes each job it copies: loads on both, stores on the writers
    assert value(last["vllm:kv_offload_load_size"], "vllm:kv_offload_load_size_count") == \
        2 * off["load_jobs"]
    assert value(last["vllm:kv_offload_store_size"], "vllm:kv_offload_store_size_count") == \
        writers * off["store_jobs"]


def test_queue_time_is_vllms_from_the_engines_intake(tmp_path):
    """Sync, the default clock: a at 0 (100 tokens, step [0, 10]), b at 2 is taken in at 10
    and scheduled at once: vLLM's queued time (from add_request) is 0, where the summary's
    queue_ms (from the arrival) is 8."""
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 100, "output_length": 3}\n'
                     '{"timestamp": 2, "input_length": 40, "output_length": 1}\n')
    out = tmp_path / "m.prom"
    r = runner.invoke(app, ["replay", str(trace), "--block-size", "16", "--metrics", str(out),
                            "--no-async-scheduling", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["latency"]["queue_ms"]["max"] == 8.0
    last = snapshots(out.read_text())[-1][1]
    fam = last["vllm:request_queue_time_seconds"]
    assert value(fam, "vllm:request_queue_time_seconds_count") == 2
    assert value(fam, "vllm:request_queue_time_seconds_sum") == 0.0


def test_metrics_port_serves_during_realtime(tmp_path):
    import threading

    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        port = sk.getsockname()[1]
    res = {}

    def replay():
        res["r"] = runner.invoke(app, ["replay", TRACE, "--num-blocks", "96", "--realtime",
                                       "40", "--metrics-port", str(port), "--json"])

    t = threading.Thread(target=replay)
    t.start()
    body = None
    deadline = time.monotonic() + 20
    while body is None and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
                body = resp.read().decode()
        except OSError:
            time.sleep(0.1)
    t.join(60)
    assert res["r"].exit_code == 0, res["r"].output
    assert body is not None and "vllm:prefix_cache_queries_total" in body
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        r = runner.invoke(app, ["replay", TRACE, "--num-blocks", "96", "--realtime", "1000",
                                "--metrics-port", str(taken.getsockname()[1])])
    assert r.exit_code == 2 and r.stderr.startswith("error: option --metrics-port:")


def test_a_clock_whose_steps_outrun_the_snapshot_limit_stops_with_one_line(tmp_path):
    """Every request at time 0 (the check before the run sees no span) and steps of an hour at
    a 1 ms interval: 3.6 million snapshots a step; refused when due (it wrote on for ever with a
    calibration's huge step), and no metrics file is left."""
    trace = tmp_path / "t.jsonl"
    # (one output token: no decode the check before the run could count, `decode_tail_ms`)
    trace.write_text('{"timestamp": 0, "input_length": 32, "output_length": 1}\n')
    out = tmp_path / "m.prom"
    r = runner.invoke(app, ["replay", str(trace), "--clock", "fixed:3600000", "--metrics",
                            str(out), "--metrics-interval-s", "0.001"])
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith("error: option --metrics-interval-s: the replay ran to 3,600 s")
    assert not out.exists() and not list(tmp_path.glob("m.prom*"))

