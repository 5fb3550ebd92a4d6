"""`kvcli sweep` checks each job's start-up while it plans (`kvcore/engine/startup.py`, the
cluster's `check_cluster` / `check_on_trace`): a value only a run refused (`--set clock=bogus`,
a model that is no preset, a CPU tier too small for a chunk, ...) failed job by job after the
sweep had started (exit 1, the results file opened and the other jobs run); now one line naming
`--set` and the key, exit 2, before any job runs and before the results file is opened."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.sweep.grid import Job, file_sha256, job_id
from kvcore.sweep.job import run_job
from kvcore.traces import read_trace

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
PREFIX = str(ROOT / "traces" / "shared-prefix.jsonl")

# (command, --set values, the key the error names, the run's own words)
REFUSED = [
    ("replay", ["clock=linear,bogus"], "clock",
     "unknown clock 'bogus'; one of roofline, calibrated, linear:C0,C1,C2, fixed:MS"),
    ("replay", ["clock=roofline"], "clock",
     "the roofline clock needs a model (--model or --model-config) and a GPU (--gpu)"),
    ("replay", ["model=no-such-model"], "model",
     "unknown model 'no-such-model'; see kvcli config --list for the 13 presets"),
    ("replay", ["model=qwen3-8b", "gpu_memory_gib=80,0.01"], "gpu_memory_gib",
     ("no memory left for the KV cache: 0.01 GiB x 0.92 = 0.01 GiB, weights 15.26 GiB "
     "(estimated), buffers 10.00 MiB; short by 15.26 GiB")),
    ("replay", ["model=qwen3-8b", "tp=1,3"], "tp",
     "qwen3-8b's 32 attention heads must be divisible by it, as vLLM requires; got 3"),
    ("replay", ["max_num_active_seqs=500"], "max_num_active_seqs",
     "500 is above max_num_seqs 128: vLLM refuses this at start-up"),
    ("replay", ["prefix_cache_retention_interval=7"], "prefix_cache_retention_interval",
     ("prefix_cache_retention_interval 7 has no effect: no sliding-window or Mamba KV cache "
     "group (set it to 0)")),
    ("replay", ["kv_offloading_size=1", "kv_offloading_size_chunks=4"],
     "kv_offloading_size_chunks", "give the CPU tier's size once: in GiB or in chunks, not both"),
    ("replay", ["kv_offloading_size=1", "offload_block_size=24"], "offload_block_size",
     "must be a multiple of the block size 16, got 24"),
    ("cluster", ["metrics_interval_ms=0.0001"], "metrics_interval_ms",
     "must be 0 (no samples) or at least 0.001 ms, got 0.0001"),
]


@pytest.mark.parametrize("command, sets, key, words", REFUSED)
def test_a_value_only_a_run_refused_stops_the_sweep_before_any_job(command, sets, key, words,
                                                                    tmp_path):
    results = tmp_path / "r.jsonl"
    args = ["sweep", "--trace", PREFIX, "--command", command, "--results", str(results),
            "--jobs", "1", *(x for s in sets for x in ("--set", s))]
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"error: option --set: {key}: {words}"), err
    assert "Traceback" not in r.output
    assert not results.exists()                 # nothing opened, no job run
    # the planner's check is the run's own: the job, run without planning, fails in its words
    config = {}
    for s in sets:
        name, _, values = s.partition("=")
        value = values.split(",")[-1]           # the refused value is the last
        config[name] = _typed(value)
    trace = read_trace(PREFIX)
    canonical, jid = job_id(command, config, file_sha256(PREFIX))
    out = run_job(Job(0, command, PREFIX, file_sha256(PREFIX), canonical, jid), trace)
    assert out.get("input_error") is True, out
    assert words in out["error"]


def _typed(text: str):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text, text)


def test_a_spec_file_names_its_line_and_key(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(f'command = "replay"\ntraces = ["{PREFIX}"]\n[grid]\n'
                    'clock = ["linear", "bogus"]\n')
    r = runner.invoke(app, ["sweep", str(spec)])
    assert r.exit_code == 2, r.output
    assert r.stderr.strip() == (f"error: {spec}:4: field 'grid.clock': unknown clock 'bogus'; "
                                "one of roofline, calibrated, linear:C0,C1,C2, fixed:MS")
    assert not (tmp_path / "s.results.jsonl").exists()


def test_values_a_run_takes_still_plan(tmp_path):
    from kvcore.sweep.run import plan_sweep

    plan = plan_sweep(None, traces=[PREFIX], sets=["clock=linear,fixed:5", "num_blocks=512,1024",
                                                   "kv_offloading_size=0.5"])
    assert [j.config for j in plan.jobs] == [
        {"clock": c, "num_blocks": n, "kv_offloading_size": 0.5}
        for c in ("linear", "fixed:5") for n in (512, 1024)]


def test_a_spec_without_a_grid_sweeps_its_traces(tmp_path):
    # (refused as "no [grid]" while `--trace A --trace B` without `--set` ran both traces)
    chat = str(ROOT / "traces" / "multiturn-chat.jsonl")
    spec = tmp_path / "s.toml"
    spec.write_text(f'traces = ["{PREFIX}", "{chat}"]\n[options]\nnum_blocks = 3000\n')
    r = runner.invoke(app, ["sweep", str(spec), "--json"])
    assert r.exit_code == 0, r.output
    assert "sweep: 2 job(s) (trace swept)" in r.stderr, r.stderr
    jobs = json.loads(r.stdout)["jobs"]
    assert [(j["trace"], j["config"]["num_blocks"]) for j in jobs] == [(PREFIX, 3000),
                                                                       (chat, 3000)]


def test_a_bare_router_option_goes_to_the_routers_that_take_it(tmp_path):
    # (as `kvcli cluster --routers llmd,round_robin --router-opt queue_weight=1` gives it: the
    # sweep refused it for the round_robin jobs)
    base = ["sweep", "--trace", PREFIX, "--command", "cluster", "--set",
            "router=llmd,round_robin", "--set", "replicas=2", "--set", "num_blocks=512"]
    r = runner.invoke(app, [*base, "--set", "router_opt=queue_weight=1", "--results",
                            str(tmp_path / "r.jsonl"), "--json"])
    assert r.exit_code == 0, r.output
    jobs = json.loads(r.stdout)["jobs"]
    assert [(j["config"]["router"], j["config"].get("router_opt")) for j in jobs] == [
        ("llmd", ["queue_weight=1"]), ("round_robin", None)]
    # a key no router of the sweep takes is refused before any job, as the cluster refuses it
    r = runner.invoke(app, [*base, "--set", "router_opt=nosuch=1", "--results",
                            str(tmp_path / "s.jsonl")])
    assert (r.exit_code, r.stderr) == (2, ("error: option --set: router_opt: no chosen router "
                                          "takes option 'nosuch' ('nosuch=1')\n"))


def test_a_model_config_is_hashed_once_a_sweep(tmp_path, monkeypatch):
    # (its bytes were read again for every grid point's job id)
    from kvcore.sweep import grid
    from kvcore.sweep.spec import spec_from_flags

    cfg = ROOT / "tests" / "data" / "perf_cases" / "models" / "qwen3-8b.config.json"
    read: list[str] = []
    real = grid.file_sha256
    monkeypatch.setattr(grid, "file_sha256", lambda p: read.append(str(p)) or real(p))
    spec = spec_from_flags("replay", [PREFIX], [f"model_config={cfg}",
                                                "num_blocks=3000,4000,5000"])
    plan = grid.expand(spec)
    assert len(plan.jobs) == 3 and read == [PREFIX, str(cfg)]


def test_a_set_value_that_is_json_keeps_its_commas(tmp_path):
    """`--set KEY=V1,V2` splits at the commas outside a JSON value: vLLM's
    --limit-mm-per-prompt object with two modalities is one value (it split into two broken
    halves, refused), and two objects make a grid of two jobs, each sized as vLLM builds it:
    gemma-3-27b's vision tower left out with images at 0 (18,849 blocks on 80 GiB against
    18,204 with it)."""
    results = tmp_path / "r.jsonl"
    r = runner.invoke(app, ["sweep", "--trace", PREFIX, "--set", "model=gemma-3-27b",
                            "--set", "gpu_memory_gib=80", "--set",
                            'limit_mm_per_prompt={"image":0,"video":0},{"image":1}',
                            "--results", str(results)])
    assert r.exit_code == 0, r.output
    # (the results file is in finishing order: jobs run in parallel)
    rows = sorted((json.loads(line) for line in results.read_text().splitlines()),
                  key=lambda j: j["index"])
    assert [(j["config"]["limit_mm_per_prompt"], j["result"]["num_blocks"]) for j in rows] == [
        ('{"image":0,"video":0}', 18_849), ('{"image":1}', 18_204)]
