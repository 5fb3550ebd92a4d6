"""Limits that keep a run finite: far arrival steps and arrival times, the benchmark's generated
stream against the host's memory. Each refusal is one line `error: ...`, exit code 2."""

from __future__ import annotations

import subprocess
import sys

import pytest
from test_hostile_options import ROOT, app, refused, runner

# -- an arrival_step of 10^12 (--arrivals step): the engine idled that many turns one by one
# -- (and, compiled, was deaf to Ctrl-C and SIGTERM while it did); now it goes to the step at once

def test_a_far_arrival_step_is_reached_at_once(tmp_path):
    import json

    def run(step: int) -> tuple[dict, list[dict]]:
        trace, steps = tmp_path / f"t{step}.jsonl", tmp_path / f"s{step}.jsonl"
        trace.write_text(json.dumps({"prompt_token_ids": [1, 2, 3, 4, 5], "output_length": 3})
                         + "\n" + json.dumps({"prompt_token_ids": [1, 2, 3, 4, 5, 6],
                                              "output_length": 2, "arrival_step": step}) + "\n")
        # a child process with a time limit: the old loop would not return (nor hear SIGTERM)
        res = subprocess.run([sys.executable, "-c", "from kvcli.app import main; main()",
                              "replay", str(trace), "--arrivals", "step", "--block-size", "4",
                              "--num-blocks", "16", "--steps", str(steps), "--json"],
                             capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout), [json.loads(x) for x in steps.read_text().splitlines()]

    near, near_steps = run(10)
    far, far_steps = run(10**12)
    assert far["steps"] == near["steps"] - 10 + 10**12
    assert (far["hit_tokens"], far["finished"]) == (near["hit_tokens"], near["finished"]) == (4, 2)
    # the same lines, the second request's steps shifted by the gap
    shift = 10**12 - 10
    assert [s["step"] for s in far_steps] == [s["step"] + (shift if s["step"] >= 10 else 0)
                                              for s in near_steps]
    assert [s["scheduled"] for s in far_steps] == [s["scheduled"] for s in near_steps]


# -- arrival times past 10^13 ms: a cluster's metrics clock stopped moving (1e20 + a step is
# -- 1e20 in a float) and the command never returned; every latency would have read 0

@pytest.mark.parametrize("line, said", [
    ({"timestamp": 1e20, "input_length": 10, "output_length": 2, "hash_ids": [0]},
     "field 'timestamp': is 1e+20 ms, past the limit of 1e+13 ms"),
    ({"chat_id": 1, "timestamp": 2e10, "input_length": 10, "output_length": 2,
      "hash_ids": [0]}, "field 'timestamp': is 2e+13 ms, past the limit"),      # bailian: s
    ({"prompt_token_ids": [1, 2], "output_length": 2, "timestamp": 1e300},
     "field 'timestamp': is 1e+300 ms, past the limit"),
])
def test_arrival_times_are_bounded(tmp_path, line, said):
    import json

    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(line) + "\n")
    for command in ("cluster", "replay"):
        refused([command, str(path)], f"error: {path}:1: {said}")
    # Unix times in ms (1.7e12) stay in
    ok = dict(line, timestamp=1.7e12 if "chat_id" not in line else 1.7e9)
    path.write_text(json.dumps(ok) + "\n")
    assert runner.invoke(app, ["replay", str(path), "--json"]).exit_code == 0


# -- kvcli bench --n 10^8: the generated stream (every op made first) grew by 150 MB a second
# -- until the machine ran out of memory

def test_bench_workload_must_fit_memory():
    from kvcore.engine.bench_workload import check_workload_fits
    from kvcore.errors import InputError

    check_workload_fits(2000, available=1 << 30)            # 86 MB: fits
    with pytest.raises(InputError) as e:
        check_workload_fits(100_000, available=2 << 30)      # 4.0 GiB
    assert e.value.field == "n"
    assert e.value.message == ("100,000 generated requests need ~4.0 GiB of host memory (~43 KB a "
                            "request: the whole stream is made first); this machine has 2.0 GiB "
                            "available")
    refused(["bench", "--n", "100000000000"], "error: option --n: 100,000,000,000 generated "
            "requests need ~4,004,")


def test_a_pool_sized_from_gpu_memory_is_refused_before_it_is_built(monkeypatch):
    from kvcore import host_memory

    monkeypatch.setattr(host_memory, "available_bytes", lambda: 8 << 30)
    res = runner.invoke(app, ["replay", str(ROOT / "traces" / "multiturn-chat.jsonl"),
                             "--model", "llama-3.1-8b", "--gpu-memory-gib", "1000000"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert res.stderr == (
        "error: option --gpu-memory-gib: 471,032,325 blocks need ~173.7 GiB of host memory for "
        "the pool (396 bytes a block: 140 for the block, 256 for its prefix-cache entry); this "
        "machine has 8.0 GiB available\n")


# -- kvcli gen with a rate of 1e-300 (or a think time of 1e300 s) wrote timestamps of 1e302 ms,
# -- exit 0: a trace every command then refused

@pytest.mark.parametrize("args, option, at", [
    (["b2b", "--qps", "1e-300"], "--qps", "7.52229e+306"),
    (["shared-prefix", "--rate", "1e-300"], "--rate", "1.18999e+305"),
    (["multiturn", "--rate", "1e-300"], "--rate", "4.74564e+304"),
    (["multiturn", "--think-time-s", "1e9"], "--think-time-s", "1.29436e+13"),
])
def test_gen_arrivals_stay_within_the_timestamp_limit(tmp_path, args, option, at):
    out = tmp_path / "t.jsonl"
    refused(["gen", *args, "-o", str(out)], f"error: option {option}: the last request would "
            f"arrive at {at} ms, past the limit of 1e+13 ms a trace's timestamps have (about "
            "317 years)")
    assert not out.exists()
    res = runner.invoke(app, ["gen", "b2b", "--qps", "1e-9", "--requests", "3", "-o", str(out)])
    assert res.exit_code == 0, res.output      # ~10^12 ms: within it
    assert runner.invoke(app, ["replay", str(out), "--mode", "cache"]).exit_code == 0


# -- --clock fixed:1e300 (or linear:1e300,0,0) was taken where --step-overhead-ms stops at an
# -- hour: simulated time went past where a float keeps steps apart and kvcli cluster hung

@pytest.mark.parametrize("spec, n", [("fixed:1e300", 1), ("linear:1e300,0,0", 3),
                                     ("linear:1,3600001,0", 3)])
@pytest.mark.parametrize("command", ["cluster", "replay"])
def test_clock_spec_numbers_are_bounded(command, spec, n):
    refused([command, str(ROOT / "traces" / "shared-prefix.jsonl"), "--clock", spec],
            f"error: option --clock: {spec!r}: expected {n} finite number(s) >= 0 and at most "
            "3,600,000 (an hour, in ms) after ':'")


# -- --offload-bandwidth-gbps 1e-300 made a chunk's transfer 1e306 ms: kvcli cluster hung

@pytest.mark.parametrize("value", ["1e-300", "0.0009"])
@pytest.mark.parametrize("command", ["cluster", "replay"])
def test_offload_bandwidth_is_bounded_below(command, value):
    refused([command, str(ROOT / "traces" / "shared-prefix.jsonl"), "--kv-offloading-size-chunks",
             "100", "--offload-bandwidth-gbps", value],
            f"error: option --offload-bandwidth-gbps: must be >= 0.001, got {float(value)!r}")


def test_worker_processes_are_bounded_by_memory():
    # `--jobs 100000` started as many Python processes (~48 MiB each) and took the machine down
    from kvcore.errors import InputError
    from kvcore.host_memory import WORKER_BYTES, check_workers

    check_workers(100, available=100 * WORKER_BYTES)
    with pytest.raises(InputError) as err:
        check_workers(101, available=100 * WORKER_BYTES)
    assert err.value.field == "jobs"
    assert err.value.message.startswith("101 worker processes need ~4.7 GiB of host memory "
                                        "(~48 MiB each before their first replay)")


def test_curve_jobs_beyond_the_machine_are_refused(tmp_path):
    # 5,000 exact points at --jobs 100000: 5,000 workers, ~234 GiB (only min(jobs, points) start)
    caps = ",".join(str(c) for c in range(1, 5001))
    res = runner.invoke(app, ["curve", str(ROOT / "traces" / "multiturn-chat.jsonl"),
                              "--policies", "fifo", "--capacities", caps, "--jobs",
                              "100000"])
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith("error: option --jobs: 5,000 worker processes need ~234.4 GiB")


def test_sweep_jobs_beyond_the_machine_are_refused_before_the_results_file(tmp_path):
    results = tmp_path / "r.jsonl"
    values = ",".join(str(v) for v in range(400, 1400))         # 1,000 jobs, ~47 GiB of workers
    res = runner.invoke(app, ["sweep", "--trace", str(ROOT / "traces" / "multiturn-chat.jsonl"),
                              "--set", f"num_blocks={values}", "--results", str(results),
                              "--jobs", "100000"])
    assert res.exit_code == 2, res.output
    assert "error: option --jobs: 1,000 worker processes need ~46.9 GiB" in res.stderr
    assert not results.exists()
