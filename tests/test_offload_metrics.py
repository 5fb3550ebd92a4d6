"""The CPU tier's Prometheus metrics (vLLM 0.33's OffloadingConnector, docs/live.md): against
the oracle's `kv_connector_stats` and `config_info` on every recorded offload case, and exact
values of a hand-checked replay on the simulated clock (transfer times, the async lookup delay,
histogram buckets)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from oracle_sched import answer_of, config_of
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay
from kvcore.live.metric_defs import FAMILIES, OFFLOAD_METRICS, STORES_SKIPPED
from kvcore.live.options import LiveOptions
from kvcore.live.session import LiveRun

DATA = Path(__file__).parent / "data"
runner = CliRunner()
ENG = {"model_name": "kvcli", "engine": "0"}
# the recorded cases both ways, the random ones as drawn (as test_offload_replay's CASES), and
# those over several groups (windowed, Mamba: the config info's tokens), a group alone and
# sized in GiB, each in its config line's mode
RECORDED = sorted((DATA / "offload_cases").glob("*.trace.jsonl"))
OTHERS = [t for d in ("offload_hybrid", "offload_mamba", "offload_mamba_partial",
                      "offload_windowed_alone") for t in sorted((DATA / d).glob("*.trace.jsonl"))
          if "prefix_match_unit" not in config_of(t)]
SIZED = [DATA / "offload_sizing" / f"{n}.trace.jsonl" for n in ("gs17", "gs66", "gs174", "gs272",
                                                                 "gs121", "gs269", "gs57")]
CASES = ([(t, "expected", False) for t in RECORDED]
         + [(t, "async.expected", True) for t in RECORDED]
         + [(t, "expected", "oa" in t.name)
            for t in sorted((DATA / "offload_fresh").glob("*seed*.trace.jsonl"))]
         + [(t, "expected", bool(config_of(t).get("async_scheduling"))) for t in OTHERS + SIZED])

# vllm/distributed/kv_transfer/kv_connector/v1/offloading/metrics.py and v1/kv_offload/cpu/
# spec.py: bucket boundaries and a few help strings, copied from vLLM 0.33
TRANSFER_SIZE = [1e6, 5e6, 10e6, 20e6, 40e6, 60e6, 80e6, 100e6, 150e6, 200e6]
BUCKETS = {
    "vllm:kv_offload_size": TRANSFER_SIZE, "vllm:kv_offload_load_size": TRANSFER_SIZE,
    "vllm:kv_offload_store_size": TRANSFER_SIZE,
    "vllm:kv_offload_lookup_async_delay_seconds": [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05,
                                                   0.1, 0.5, 1, 5, 10],
    "vllm:kv_offload_cpu_allocation_size": [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144],
}
HELP = {
    "vllm:kv_offload_load_time": "Total load time from offload storage to GPU, in seconds.",
    "vllm:kv_offload_store_size": "Histogram of KV offload store operation size, in bytes.",
    "vllm:kv_offload_total_time": "Total time measured by all KV offloading operations",
    "vllm:kv_offload_allocation_failure":
        "Number of KV offload store allocation attempts that failed.",
    "vllm:kv_offload_lookup_async_delay_seconds": (
        "Histogram of time between a request's offload lookup first deferring and the "
        "following lookup resolving, or request finish, in seconds."),
}


def test_definitions_are_vllms() -> None:
    defs = {n: (doc, fam) for n, _, doc, _, fam in OFFLOAD_METRICS + (STORES_SKIPPED,)}
    for name, bounds in BUCKETS.items():
        assert list(FAMILIES[defs[name][1]]) == bounds, name       # type: ignore[index]
    for name, doc in HELP.items():
        assert defs[name][0] == doc
    # (not exported: it times one Python call, docs/live.md)
    assert "vllm:kv_offload_lookup_sync_delay_seconds" not in defs


def last_snapshot(text: str) -> dict:
    body = text.split("# kvcli snapshot sim_time_s=")[-1].partition("\n")[2]
    return {f.name: f for f in text_string_to_metric_families(body)}


def sample(fams: dict, family: str, name: str, **labels) -> float | None:
    fam = fams[family]
    found = [s.value for s in fam.samples if s.name == name
             and all(s.labels.get(k) == v for k, v in ({**ENG, **labels}).items())]
    assert len(found) <= 1
    return found[0] if found else None


def metrics_of(trace: Path, asyn: bool) -> dict:
    out = io.BytesIO()
    live = LiveRun(LiveOptions(), metrics_out=out)
    replay(str(trace), ReplayOptions(arrivals="step", async_scheduling=asyn), live=live)
    return last_snapshot(out.getvalue().decode())


@pytest.mark.parametrize(("trace", "kind", "asyn"), CASES,
                         ids=[f"{t.name.split('.')[0]}{'-async' if a else ''}"
                              for t, _, a in CASES])
def test_the_oracles_connector_stats(trace: Path, kind: str, asyn: bool) -> None:
    """vLLM's stats summed over the run (the oracle's fake worker: every copy takes 0.0 s) and
    its config info, from our last snapshot; a series vLLM never made is absent here too."""
    summary = answer_of(trace, kind)[-1]["summary"]
    theirs = summary["kv_connector_stats"]
    fams = metrics_of(trace, asyn)
    ours: dict[str, float] = {}
    for short in ("load_bytes", "store_bytes", "load_time", "store_time",
                  "allocation_failure", "stores_skipped"):
        family = "vllm:kv_offload_" + short
        if family in fams and (v := sample(fams, family, family + "_total")) is not None:
            ours["kv_offload_" + short] = v
    for short in ("load_size", "store_size", "cpu_allocation_size"):
        family = "vllm:kv_offload_" + short
        for end in ("_count", "_sum"):
            if (v := sample(fams, family, family + end)) is not None:
                ours["kv_offload_" + short + end] = v
    assert ours == theirs
    info = [s.labels for s in fams["vllm:kv_offload_config_info"].samples]
    assert len(info) == 1 and info[0].pop("model_name") == "kvcli" and info[0].pop("engine")
    assert info == [{k: str(v) for k, v in series.items()} for series in summary["config_info"]]
    # the deprecated metrics are the flat ones by transfer type
    for kind_, tt in (("load", "CPU_to_GPU"), ("store", "GPU_to_CPU")):
        assert sample(fams, "vllm:kv_offload_total_bytes", "vllm:kv_offload_total_bytes_total",
                      transfer_type=tt) == theirs.get(f"kv_offload_{kind_}_bytes", 0)
        assert sample(fams, "vllm:kv_offload_size", "vllm:kv_offload_size_count",
                      transfer_type=tt) == theirs.get(f"kv_offload_{kind_}_size_count", 0)


def test_the_cases_cover_the_metrics() -> None:
    """Loads, failures and skipped stores all happen in the cases (else the comparison above
    checks absent series only)."""
    totals: dict[str, float] = {}
    for t, kind, _ in CASES:
        for k, v in answer_of(t, kind)[-1]["summary"]["kv_connector_stats"].items():
            totals[k] = totals.get(k, 0) + v
    for k in ("kv_offload_load_size_count", "kv_offload_allocation_failure",
              "kv_offload_stores_skipped", "kv_offload_cpu_allocation_size_count"):
        assert totals.get(k, 0) > 0, k


# A at 0 and B at 12 ms, the same 4 blocks (64 tokens), a fixed 10 ms step, 2 MiB a block
# (the default geometry) and 8,388,608 / 25 bytes a ms: A stores its 4 blocks in one job,
# submitted at 10 ms and done at 35 (25 ms), reported at the end of the step [30, 40). B comes
# in at 20: GPU hit 48 (T-1), its lookup from chunk 3 finds it being written and says "not
# yet" at 20 and 30, and answers at 40 (16 tokens): one load of 1 block, 6.25 ms.
TWO = ('{"timestamp": 0, "input_length": 64, "output_length": 1, "block_size": 16, '
       '"hash_ids": [1, 2, 3, 4]}\n'
       '{"timestamp": 12, "input_length": 64, "output_length": 1, "block_size": 16, '
       '"hash_ids": [1, 2, 3, 4]}\n')
CLOCKED = ["--block-size", "16", "--num-blocks", "64", "--clock", "fixed:10",
           "--no-async-scheduling", "--max-model-len", "128"]
TIER = ["--kv-offloading-size-chunks", "16", "--offload-bandwidth-gbps", "0.33554432"]


def run(tmp_path: Path, *opts: str) -> dict:
    trace, out = tmp_path / "t.jsonl", tmp_path / "m.prom"
    trace.write_text(TWO)
    r = runner.invoke(app, ["replay", str(trace), *CLOCKED, *opts, "--metrics", str(out),
                            "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["finished"] == 2
    return last_snapshot(out.read_text())


def buckets(fams: dict, family: str, **labels) -> dict[str, float]:
    return {s.labels["le"]: s.value for s in fams[family].samples
            if s.name == family + "_bucket"
            and all(s.labels.get(k) == v for k, v in ({**ENG, **labels}).items())}


def test_a_hand_checked_replay_on_the_clock(tmp_path: Path) -> None:
    fams = run(tmp_path, *TIER)
    # one job each way: its bytes, its bucket, its modelled copy time (bytes over bandwidth)
    for kind, tt, nbytes, secs, below, at in (
            ("store", "GPU_to_CPU", 8_388_608, 0.025, "5e+06", "1e+07"),
            ("load", "CPU_to_GPU", 2_097_152, 0.00625, "1e+06", "5e+06")):
        for family in (f"vllm:kv_offload_{kind}_size", "vllm:kv_offload_size"):
            labels = {"transfer_type": tt} if family == "vllm:kv_offload_size" else {}
            assert sample(fams, family, family + "_count", **labels) == 1
            assert sample(fams, family, family + "_sum", **labels) == nbytes
            got = buckets(fams, family, **labels)
            assert (got[below], got[at], got["+Inf"]) == (0, 1, 1)
        for family, labels in ((f"vllm:kv_offload_{kind}_time", {}),
                               ("vllm:kv_offload_total_time", {"transfer_type": tt})):
            assert sample(fams, family, family + "_total", **labels) == pytest.approx(secs,
                                                                                      rel=1e-12)
        assert sample(fams, f"vllm:kv_offload_{kind}_bytes",
                      f"vllm:kv_offload_{kind}_bytes_total") == nbytes
    # B's deferral: from the step at 20 ms to the one at 40 that answered
    delay = "vllm:kv_offload_lookup_async_delay_seconds"
    assert sample(fams, delay, delay + "_count") == 1
    assert sample(fams, delay, delay + "_sum") == pytest.approx(0.02, rel=1e-12)
    assert buckets(fams, delay)["0.01"] == 0 and buckets(fams, delay)["0.05"] == 1
    # no offer failed: no series (vLLM binds one at the first failure)
    assert fams["vllm:kv_offload_allocation_failure"].samples == []
    # the manager: one allocation, A's 4 chunks (B's are in the tier); idle at the end
    alloc = "vllm:kv_offload_cpu_allocation_size"
    assert (sample(fams, alloc, alloc + "_count"), sample(fams, alloc, alloc + "_sum")) == (1, 4)
    assert sample(fams, "vllm:kv_offload_cpu_cache_usage_perc",
                  "vllm:kv_offload_cpu_cache_usage_perc") == 0.0
    assert "vllm:kv_offload_stores_skipped" not in fams     # (only with a store threshold)
    # 16 chunks of 2 MiB; a 128-token request needs 8 chunks: 16 x 128 // 8 tokens
    (info,) = fams["vllm:kv_offload_config_info"].samples
    assert info.value == 1 and info.labels == {**ENG, "cpu_num_chunks": "16",
                                               "cpu_blocks_per_chunk": "1",
                                               "cpu_kv_cache_size_bytes": "33554432",
                                               "cpu_kv_cache_size_tokens": "256"}


def test_step_counted_transfers_take_no_time_and_no_tier_exports_none(tmp_path: Path) -> None:
    """With step counts (no bandwidth) a copy is not timed: 0.0, as the oracle's fake worker
    reports; without a tier no kv_offload family at all."""
    fams = run(tmp_path, "--kv-offloading-size-chunks", "16", "--offload-load-steps", "1",
               "--offload-store-steps", "2")
    assert sample(fams, "vllm:kv_offload_store_time", "vllm:kv_offload_store_time_total") == 0.0
    assert sample(fams, "vllm:kv_offload_store_size", "vllm:kv_offload_store_size_count") == 1
    fams = run(tmp_path)
    assert "vllm:prefix_cache_hits" in fams
    assert [n for n in fams if n.startswith("vllm:kv_offload")] == []
