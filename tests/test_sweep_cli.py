"""`kvcli sweep` end to end on the local executor: results equal to each job run alone,
`report`, `--json`, `--plot`, the jobs' warnings. Resuming a sweep: tests/test_sweep_resume.py."""

from __future__ import annotations

import json
from pathlib import Path

from sweep_runs import kvcli_json, result_lines
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay
from kvcore.sweep.job import strip_wall_times
from kvcore.sweep.run import plan_sweep

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
CHAT = str(ROOT / "traces" / "multiturn-chat.jsonl")
PREFIX = str(ROOT / "traces" / "shared-prefix.jsonl")


def test_results_equal_each_job_run_alone(tmp_path):
    res = tmp_path / "r.jsonl"
    sets = ["num_blocks=512,2048", "eviction_policy=lru,arc", "kv_offloading_size=0.5",
            "max_num_seqs=64"]
    args = ["sweep", "--trace", CHAT, *(x for s in sets for x in ("--set", s)),
            "--results", str(res), "--jobs", "2"]
    doc = kvcli_json(*args)
    assert doc["jobs_total"] == doc["jobs_finished"] == 4
    assert doc["swept"] == ["num_blocks", "eviction_policy"]
    lines = {d["job_id"]: d for d in result_lines(res)}
    assert len(lines) == 4
    plan = plan_sweep(None, traces=[CHAT], sets=sets)
    assert [j["job_id"] for j in doc["jobs"]] == [j.job_id for j in plan.jobs]  # grid order
    for job, shown in zip(plan.jobs, doc["jobs"], strict=True):
        line = lines[job.job_id]
        assert line["config"] == job.config and line["index"] == job.index
        assert line["kvcli_version"] and line["wall_time_s"] >= 0
        assert shown["result"] == line["result"]
        # the pure function, called directly
        direct = replay(CHAT, job.replay_options()).to_dict()
        assert line["result"] == strip_wall_times(direct)
        assert line["result"]["config"]["num_blocks"] == job.config["num_blocks"]
    # and `kvcli replay --json` with the same options on its command line
    j = plan.jobs[3]
    alone = kvcli_json("replay", CHAT, "--num-blocks", "2048", "--offload-eviction-policy",
                        "arc", "--kv-offloading-size", "0.5", "--max-num-seqs", "64")
    assert j.config["num_blocks"] == 2048 and j.config["eviction_policy"] == "arc"
    assert lines[j.job_id]["result"] == strip_wall_times(alone)
    assert ReplayOptions(num_blocks=2048).num_blocks == 2048


def test_cluster_results_equal_kvcli_cluster(tmp_path):
    spec = tmp_path / "c.toml"
    spec.write_text(f'command = "cluster"\ntraces = ["{PREFIX}"]\n[options]\nnum_blocks = 256\n'
                    'router_opt = ["llmd.prefix_weight=2"]\n'
                    '[grid]\nrouter = ["round_robin", "llmd"]\nreplicas = [2, 3]\n')
    doc = kvcli_json("sweep", str(spec))
    assert (tmp_path / "c.results.jsonl").exists()          # the default results file
    assert doc["swept"] == ["router", "replicas"] and doc["jobs_finished"] == 4
    last = doc["jobs"][3]
    assert last["swept"] == {"router": "llmd", "replicas": 3}
    alone = kvcli_json("cluster", PREFIX, "--num-blocks", "256", "--replicas", "3",
                        "--router", "llmd", "--router-opt", "prefix_weight=2")
    assert last["result"] == strip_wall_times(alone)
    assert last["metrics"]["routing_loss"] == alone["routers"][0]["routing_loss"]


def test_report_json_and_plots(tmp_path):
    res = tmp_path / "r.jsonl"
    r = runner.invoke(app, ["sweep", "--trace", CHAT, "--set", "num_blocks=512,1024,2048",
                            "--set", "policy=fcfs,priority", "--results", str(res),
                            "--plot", str(tmp_path / "plots"), "--metrics",
                            "hit_rate,ttft_p99_ms"])
    assert r.exit_code == 0, r.output
    assert "6 of 6 jobs finished" in r.stdout and "TTFT p99 ms" in r.stdout
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["sweep-num_blocks.png"]
    rep = kvcli_json("sweep", "report", str(res))
    swept = kvcli_json("sweep", "--trace", CHAT, "--set", "num_blocks=512,1024,2048",
                        "--set", "policy=fcfs,priority", "--results", str(res), "--resume")
    assert rep == swept              # nothing ran again; the report is the sweep's document
    assert [j["index"] for j in rep["jobs"]] == list(range(6))
    # a partial results file: the report shows what finished
    res.write_text("\n".join(res.read_text().splitlines()[::2]) + "\n")
    r = runner.invoke(app, ["sweep", "report", str(res)])
    # ("3 of 3 jobs finished" read as complete: a results file holds no grid size)
    assert r.exit_code == 0 and "3 finished job(s) in r.jsonl (a results file holds no grid " \
        "size)" in " ".join(r.stdout.split()), r.output
    r = runner.invoke(app, ["sweep", "report", str(res), "--resume"])
    assert r.exit_code == 2 and "not with report" in r.stderr
    r = runner.invoke(app, ["sweep", "--trace", CHAT, "--set", "num_blocks=512,1024",
                            "--results", str(res)])
    assert r.exit_code == 2 and "--resume runs only the missing ones" in r.stderr


def test_each_distinct_warning_of_the_jobs_is_said_once_with_its_jobs(tmp_path):
    # four jobs on the default (uncalibrated) clock; the two running one request at a time
    # fall behind the trace; before, the warnings were only in the results file (a job setting
    # step_overhead_ms, even to the default 5, runs the user's clock: test_clock_user_set.py)
    res = tmp_path / "r.jsonl"
    r = runner.invoke(app, ["sweep", "--trace", CHAT, "--set", "max_num_seqs=128,1",
                            "--set", "block_size=16,32", "--jobs", "1", "--results", str(res)])
    assert r.exit_code == 0, r.output
    said = [x for x in r.stderr.splitlines() if x.startswith("warning: job")]
    by_index = {d["index"]: (d["config"]["max_num_seqs"], d["result"]["warnings"])
                for d in result_lines(res)}
    slow = sorted(i for i, (n, _) in by_index.items() if n == 1)
    fast = sorted(i for i, (n, _) in by_index.items() if n == 128)
    assert [len(by_index[i][1]) for i in range(4)] == [1, 1, 2, 2]
    assert (fast, slow) == ([0, 1], [2, 3])
    # the same text once with its jobs; job 2's and job 3's delays differ: said apiece
    clock = by_index[0][1][0]
    assert all(w[0] == clock for _, w in by_index.values())
    assert by_index[2][1][1] != by_index[3][1][1]
    assert said == [f"warning: jobs 0-3: {clock}",
                    f"warning: job 2: {by_index[2][1][1]}", f"warning: job 3: {by_index[3][1][1]}"]
    assert said[0].startswith("warning: jobs 0-3: uncalibrated clock: ")
    assert said[1].startswith("warning: job 2: the simulated engine fell behind the trace")
    again = runner.invoke(app, ["sweep", "report", str(res)])
    assert [x for x in again.stderr.splitlines() if x.startswith("warning: job")] == said


def test_report_of_a_file_holding_two_grids(tmp_path):
    # a file resumed with another grid keeps the first grid's lines (docs/sweep.md): '#' repeated
    # without a word, and a job of the first grid showed 'block_size none' (it ran at 16)
    head = tmp_path / "t.jsonl"
    head.write_text("".join(Path(CHAT).read_text().splitlines(keepends=True)[:20]))
    res = tmp_path / "r.jsonl"
    for extra in ([], ["--set", "block_size=16,32"]):
        r = runner.invoke(app, ["sweep", "--trace", str(head), "--set", "num_blocks=128,256",
                                *extra, "--results", str(res), "--resume"])
        assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["sweep", "report", str(res)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert f"{res}: its jobs come from more than one grid (their indexes repeat): '#' is each " \
        "job's place in its own grid" in " ".join(r.stderr.split())
    rows = [ln.split("│")[1:4] for ln in r.stdout.splitlines() if ln.startswith("│")]
    cells = sorted((c.strip(), b.strip()) for _, b, c in rows)    # (num_blocks, block_size)
    assert cells == [("128", "16"), ("128", "32"), ("128", "default"), ("256", "16"),
                     ("256", "32"), ("256", "default")], r.stdout
    # its warnings name jobs by id ("jobs 0, 2:" named a job of each grid)
    said = [ln for ln in r.stderr.splitlines() if "uncalibrated clock" in ln]
    assert len(said) == 1 and said[0].startswith("warning: every job: uncalibrated clock")
    lines = result_lines(res)
    lines[4]["result"]["warnings"].append("only this one")
    res.write_text("".join(json.dumps(d) + "\n" for d in lines))
    r = runner.invoke(app, ["sweep", "report", str(res)])
    assert f"warning: job {lines[4]['job_id']}: only this one\n" in r.stderr


def test_a_swept_list_is_one_readable_cell():
    """router_opt's values are lists: the table showed "['llmd.prefix_weight=3', ...]"."""
    from kvcli.sweep_view import sweep_view

    jobs = [{"index": 0, "job_id": "a", "metrics": None,
             "config": {"router_opt": ["llmd.prefix_weight=3", "llmd.queue_weight=1"]},
             "swept": {"router_opt": ["llmd.prefix_weight=3", "llmd.queue_weight=1"]}},
            {"index": 1, "job_id": "b", "metrics": None, "config": {},
             "swept": {"router_opt": None}}]
    doc = {"swept": ["router_opt"], "metrics": [], "jobs": jobs, "command": "cluster",
           "jobs_finished": 0, "jobs_total": 2}
    rows = sweep_view(doc).tables[0].rows
    assert [r[1] for r in rows] == ["llmd.prefix_weight=3, llmd.queue_weight=1", "default"]
