"""vLLM 0.33's MFU metrics (`--enable-mfu-metrics`, docs/live.md): each processed batch's perf.py
counts in `vllm:estimated_*_per_gpu_total`. The expected totals are rebuilt here from the
replay's `--steps` lines alone: each step's batch as perf.py sees it (a request admitted this
step, first or resumed, is a prefill; a running one above 1 token; its context the tokens it
had computed plus the scheduled ones), counted with `vllm_counts`, summed over the batches vLLM
processes (every step under sync, `processed` under async, the empty ones and the end's
included)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.clock.batch import StepBatch
from kvcore.clock.vllm_count import vllm_counts, vllm_shape
from kvcore.live.metric_defs import MFU_METRICS
from kvcore.models import load_preset

runner = CliRunner()
SHAPE = vllm_shape(load_preset("llama-3.1-8b"))
# (an fp8 KV cache: a 1-token prefill reads its context at 2 bytes, a decode at 1, so the class
# shows in the totals; at bf16 both read 2 bytes and give the same numbers)
FP8 = vllm_shape(load_preset("llama-3.1-8b"), kv_cache_dtype="fp8")
NAMES = ("vllm:estimated_flops_per_gpu", "vllm:estimated_read_bytes_per_gpu",
         "vllm:estimated_write_bytes_per_gpu")

# From vLLM 0.33's source, vllm/v1/metrics/perf.py (PerfMetricsProm, ~1760-1795): the counters,
# their documentation strings; labels are PrometheusStatLogger's [model_name, engine].
VLLM_MFU = [
    ("vllm:estimated_flops_per_gpu_total", "counter",
     ("Estimated number of floating point operations per GPU "
      "(for Model Flops Utilization calculations).")),
    ("vllm:estimated_read_bytes_per_gpu_total", "counter",
     ("Estimated number of bytes read from memory per GPU "
      "(for Model Flops Utilization calculations).")),
    ("vllm:estimated_write_bytes_per_gpu_total", "counter",
     ("Estimated number of bytes written to memory per GPU "
      "(for Model Flops Utilization calculations).")),
]

# Two requests at 0 (the second hits 16 of its 20 tokens), a third at 5 ms that hits 32 of its
# 33: a new request of 1 token, a prefill for perf.py.
TRACE = [
    {"timestamp": 0, "input_length": 40, "output_length": 5, "block_size": 16,
     "hash_ids": [1, 2, 3]},
    {"timestamp": 0, "input_length": 20, "output_length": 3, "block_size": 16,
     "hash_ids": [1, 4]},
    {"timestamp": 5, "input_length": 33, "output_length": 4, "block_size": 16,
     "hash_ids": [1, 2, 5]},
]
# In 12 blocks request 2 is preempted (step 18) and request 1 resumes at step 40 with a hit of
# 96 tokens and 1 token scheduled: vLLM 0.33's V2 model runner hands it over as a new request,
# so perf.py bills a prefill, where a running 1-token request is a decode.
PREEMPT = [
    {"timestamp": 0, "input_length": 64, "output_length": 40, "block_size": 16,
     "hash_ids": [1, 2, 3, 4]},
    {"timestamp": 0, "input_length": 64, "output_length": 40, "block_size": 16,
     "hash_ids": [1, 2, 5, 6]},
    {"timestamp": 1, "input_length": 48, "output_length": 20, "block_size": 16,
     "hash_ids": [1, 7, 8]},
]


def _write(tmp_path: Path, lines: list[dict]) -> str:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return str(path)


def last_values(text: str) -> dict[tuple[str, str], float]:
    """{(counter, engine): value} of the file's last snapshot."""
    body = text.split("# kvcli snapshot sim_time_s=")[-1].partition("\n")[2]
    return {(f.name, s.labels["engine"]): s.value
            for f in text_string_to_metric_families(body) if f.name in NAMES
            for s in f.samples if s.name.endswith("_total")}


def replay(tmp_path: Path, lines: list[dict], *args: str) -> tuple[tuple[int, ...], list[dict]]:
    prom, steps = tmp_path / "m.prom", tmp_path / "s.jsonl"
    r = runner.invoke(app, ["replay", _write(tmp_path, lines), "--model", "llama-3.1-8b",
                            "--enable-mfu-metrics", "--metrics", str(prom), "--steps",
                            str(steps), "--json", *args])
    assert r.exit_code == 0, r.output
    vals = last_values(prom.read_text())
    got = tuple(int(vals[(n, "0")]) for n in NAMES)
    assert all(vals[(n, "0")] == v for n, v in zip(NAMES, got, strict=True))   # integers
    return got, [json.loads(x) for x in steps.read_text().splitlines()]


def batches(lines: list[dict], *, resumed_as_new: bool = True) -> dict[int, StepBatch]:
    """Each scheduling step's perf.py batch, from the step lines alone."""
    computed: dict[str, int] = {}
    resumed: set[str] = set()
    out = {}
    for d in lines:
        if d.get("schedule_called") is False:
            continue
        b = StepBatch()
        for rid, n in d["scheduled"].items():
            new = rid in d["admitted"]
            if new:
                computed[rid] = d["admitted"][rid]      # the hit
            computed[rid] += n                         # perf.py's context_len
            prefill = (new and (resumed_as_new or rid not in resumed)) or n > 1
            b.add(n, computed[rid], prefill)
        for rid in d["preempted"]:
            resumed.add(rid)
        out[d["step"]] = b
    return out


def processed(lines: list[dict], *, async_: bool,
              resumed_as_new: bool = True) -> list[StepBatch]:
    """The batches vLLM processes, in order: every step's (sync) or each `processed` one
    (async), then at the end those left queued and the step flushing the last finished ids."""
    by_step = batches(lines, resumed_as_new=resumed_as_new)
    if async_:
        done = [d["processed"] for d in lines if d["processed"] is not None]
        left = sorted(set(by_step) - set(done))
        assert all(by_step[s].num_tokens == 0 for s in left)
        order = [by_step[s] for s in done + left]
    else:
        # a sync step that schedules nothing writes no line: every step number is one batch
        order = [by_step.get(s, StepBatch()) for s in range(lines[-1]["step"] + 1)]
    assert lines[-1]["finished"]
    return [*order, StepBatch()]


def expected(lines: list[dict], *, async_: bool, shape=SHAPE,
             resumed_as_new: bool = True) -> tuple[int, ...]:
    total = [0, 0, 0]
    for b in processed(lines, async_=async_, resumed_as_new=resumed_as_new):
        c = vllm_counts(shape, b)
        for i, v in enumerate((c.num_flops, c.num_read_bytes, c.num_write_bytes)):
            total[i] += v
    return tuple(total)


@pytest.mark.parametrize("mode", ["--no-async-scheduling", "--async-scheduling"])
def test_counters_are_the_sum_of_perf_py_over_the_processed_batches(tmp_path, mode):
    got, lines = replay(tmp_path, TRACE, mode)
    async_ = mode == "--async-scheduling"
    assert got == expected(lines, async_=async_)
    # (request 2's first step: 1 token after a hit of 32, billed as a prefill)
    first = next(d for d in lines if "2" in d["admitted"])
    assert first["scheduled"]["2"] == 1 and first["admitted"]["2"] == 32


ORACLE = Path(__file__).parent / "data" / "perf_replay"
CASES = {"trace-sync": (TRACE, ["--no-async-scheduling"]),
         "trace-async": (TRACE, ["--async-scheduling"]),
         "preempt-sync": (PREEMPT, ["--num-blocks", "12", "--kv-cache-dtype", "fp8",
                                    "--no-async-scheduling"])}


@pytest.mark.parametrize("name", sorted(CASES))
def test_counters_are_vllms_own_perf_py_sums(tmp_path, name):
    """End to end against vLLM 0.33.0's perf.py (tests/data/perf_replay: `oracle perf` of the
    batches these replays process, README there): the same batches, and the counters its sums."""
    trace, args = CASES[name]
    got, lines = replay(tmp_path, trace, *args)
    rows = [json.loads(x) for x in (ORACLE / f"{name}.steps.jsonl").read_text().splitlines()]
    spec = [sorted((r["num_tokens"], r["context_len"], r["is_prefill"]) for r in row["requests"])
            for row in rows[1:]]
    ours = processed(lines, async_="--async-scheduling" in args)
    assert [sorted(b.requests) for b in ours] == spec
    answers = [json.loads(x) for x in (ORACLE / f"{name}.expected.jsonl").read_text()
               .splitlines()][1:]
    assert got == tuple(sum(a[k] for a in answers) for k in (
        "num_flops_per_gpu", "num_read_bytes_per_gpu", "num_write_bytes_per_gpu"))


@pytest.mark.parametrize("mode", ["--no-async-scheduling", "--async-scheduling"])
def test_a_resumed_request_is_a_prefill(tmp_path, mode):
    got, lines = replay(tmp_path, PREEMPT, "--num-blocks", "12", "--kv-cache-dtype", "fp8", mode)
    assert any(d["preempted"] for d in lines)
    async_ = mode == "--async-scheduling"
    assert got == expected(lines, async_=async_, shape=FP8)
    if not async_:
        d = next(d for d in lines if d["step"] == 40)
        assert d["scheduled"]["1"] == 1 and d["admitted"]["1"] == 96
        # (the V1 model runner's resumed-as-cached classification gives other numbers)
        assert got != expected(lines, async_=False, shape=FP8, resumed_as_new=False)


def test_decode_windows_and_fast_forward_change_nothing(tmp_path):
    # long decodes, so that windows and the fast-forward would run (the counts need each step)
    long = [dict(x, output_length=300) for x in TRACE]
    got, lines = replay(tmp_path, long, "--no-async-scheduling")
    assert got == expected(lines, async_=False)
    got_a, lines_a = replay(tmp_path, long, "--async-scheduling")
    assert got_a == expected(lines_a, async_=True)


def test_definitions_and_exposition_are_vllms(tmp_path):
    assert [(n, k, h) for n, k, h, _, _ in MFU_METRICS] == VLLM_MFU
    assert all(extra == () for *_, extra, _ in MFU_METRICS)
    prom = tmp_path / "m.prom"
    r = runner.invoke(app, ["replay", _write(tmp_path, TRACE), "--model", "llama-3.1-8b",
                            "--metrics", str(prom)])
    assert r.exit_code == 0, r.output
    text = prom.read_text()
    for name, kind, doc in VLLM_MFU:
        assert f"# HELP {name} {doc}\n# TYPE {name} {kind}\n" in text
        assert f'{name}{{engine="0",model_name="llama-3.1-8b"}} 0.0' in text
    # without the flag vLLM registers them all the same, and they stay 0
    assert set(last_values(text).values()) == {0.0}


def test_cluster_replica_counts_as_the_replay(tmp_path):
    got, _ = replay(tmp_path, TRACE, "--no-async-scheduling")
    prom = tmp_path / "c.prom"
    r = runner.invoke(app, ["cluster", _write(tmp_path, TRACE), "--replicas", "2",
                            "--router", "round_robin", "--model", "llama-3.1-8b",
                            "--no-async-scheduling", "--enable-mfu-metrics",
                            "--metrics", str(prom), "--json"])
    assert r.exit_code == 0, r.output
    vals = last_values(prom.read_text())
    assert {e for _, e in vals} == {"0", "1"}
    assert all(vals[(n, e)] > 0 for n in NAMES for e in "01")
    # (one replica: the replay's run, the same counts)
    r = runner.invoke(app, ["cluster", _write(tmp_path, TRACE), "--replicas", "1",
                            "--model", "llama-3.1-8b", "--no-async-scheduling",
                            "--enable-mfu-metrics", "--metrics", str(prom), "--json"])
    assert r.exit_code == 0, r.output
    vals = last_values(prom.read_text())
    assert tuple(int(vals[(n, "0")]) for n in NAMES) == got


@pytest.mark.parametrize("args,says", [
    ([], ("option --enable-mfu-metrics: needs a model (--model or --model-config): vLLM's "
         "perf.py counts nothing without one")),
    (["--model", "llama-3.1-8b", "-pp", "2"], ("option --enable-mfu-metrics: not with "
                                              "--pipeline-parallel-size")),
])
@pytest.mark.parametrize("command", ["replay", "cluster"])
def test_refused_in_one_line(tmp_path, args, says, command):
    prom = tmp_path / "m.prom"
    r = runner.invoke(app, [command, _write(tmp_path, TRACE), "--enable-mfu-metrics",
                            "--metrics", str(prom), "--num-blocks", "64", *args])
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: " + says), r.stderr
    assert "Traceback" not in r.output and not prom.exists() and r.stdout == ""


def test_refused_without_metrics(tmp_path):
    r = runner.invoke(app, ["replay", _write(tmp_path, TRACE), "--model", "llama-3.1-8b",
                            "--enable-mfu-metrics"])
    assert r.exit_code == 2
    assert r.stderr.strip() == ("error: option --enable-mfu-metrics: has no effect without "
                                "--metrics FILE or --metrics-port")
