"""`kvcli cluster` and `kvcli stats DIR` through the command line."""

from __future__ import annotations

import json
import sys

import pytest
from typer.testing import CliRunner

from kvcli.app import app

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from test_cluster import _trace

runner = CliRunner()


def test_cluster_json_tables_events_and_stats(tmp_path):
    path = tmp_path / "t.jsonl"
    _trace(path, n=30)
    ev = tmp_path / "ev"
    dec = tmp_path / "dec.jsonl"
    args = ["cluster", str(path), "--replicas", "2", "--routers", "round_robin,oracle",
            "--num-blocks", "24", "--block-size", "16", "--events", str(ev),
            "--decisions", str(dec)]
    r = runner.invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert [x["router"] for x in doc["routers"]] == ["round_robin", "oracle"]
    for x in doc["routers"]:
        assert {"hit_rate", "hit_tokens", "prompt_tokens", "routing_loss", "capacity_loss",
                "latency", "replicas"} <= set(x)
        assert sum(p["requests"] for p in x["replicas"]) == 30
        assert x["hit_tokens"] == sum(p["hit_tokens"] for p in x["replicas"])
    lines = dec.read_text().splitlines()
    assert len(lines) == 60 and json.loads(lines[0])["router"] == "round_robin"
    assert sorted(p.name for p in (ev / "oracle").iterdir()) == [
        "replica-0.events.jsonl", "replica-0.vllm.jsonl", "replica-1.events.jsonl",
        "replica-1.vllm.jsonl"]
    r = runner.invoke(app, [*args])
    assert r.exit_code == 0 and "routing loss" in r.stdout and "per replica" in r.stdout
    # kvcli stats on one router's folder: one report per replica, equal to the cluster's
    r = runner.invoke(app, ["stats", str(ev / "oracle"), "--json"])
    assert r.exit_code == 0, r.output
    st = json.loads(r.stdout)
    want = doc["routers"][1]["replicas"]
    assert [x["reuse"]["hit_tokens"] for x in st["replicas"]] == [p["hit_tokens"] for p in want]
    r = runner.invoke(app, ["stats", str(ev)])
    assert r.exit_code == 2 and "2 routers" in r.output
    # a replay option on a cluster's streams replays nothing: said, and the reports unchanged
    r = runner.invoke(app, ["stats", str(ev / "oracle"), "--num-blocks", "5", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout) == st
    assert r.stderr == ("warning: option(s) --num-blocks: no effect on a cluster's folder of "
                        "event streams (the replay options apply when SOURCE is a trace)\n")


def test_bad_cluster_options_exit_2(tmp_path):
    path = tmp_path / "t.jsonl"
    _trace(path, n=5)
    for extra, words in ((["--router", "nope"], "unknown router"),
                         (["--router-opt", "x=1"], "--router-opt"),
                         (["--router-opt", "novalue"], "KEY=VALUE"),
                         (["--replicas", "0"], "--replicas"),
                         (["--routers", "random,random"], "twice"),
                         # a comma list to --router, a near miss, each option named as typed
                         (["--router", "llmd,random"], ("option --router: unknown router "
                          "'llmd,random' (several routers: --routers A,B,...)")),
                         (["--router", "round-robin"], "(did you mean round_robin?)"),
                         (["--routers", "llmd,lmd"], ("option --routers: unknown router 'lmd' "
                          "(did you mean llmd?)"))):
        r = runner.invoke(app, ["cluster", str(path), "--num-blocks", "24", *extra])
        assert r.exit_code == 2, (extra, r.output)
        assert words in r.output and "Traceback" not in r.output
        assert len(r.output.strip().splitlines()) == 1


def test_list_routers():
    # --json after --list-routers counts (an eager callback printed the table before it was read)
    for args in (["--list-routers", "--json"], ["--json", "--list-routers"]):
        r = runner.invoke(app, ["cluster", *args])
        assert r.exit_code == 0, r.output
        data = json.loads(r.stdout)
        assert data["round_robin"] == {"summary": "`round_robin`: request k goes to replica k "
                                       "mod N.", "options": {}}
        # the whole first paragraph, not its first line
        assert data["aibrix"]["summary"].endswith("only the least-loaded pods are candidates "
                                                  "when the load is imbalanced.")
        assert data["dynamo"]["options"]["router_ttl_secs"]["default"] == 120.0
    r = runner.invoke(app, ["cluster", "--list-routers"], env={"COLUMNS": "100"})
    assert r.exit_code == 0 and "round_robin" in r.stdout and "oracle" in r.stdout
    r = runner.invoke(app, ["cluster", "--replicas", "2"])
    assert r.exit_code == 2 and "Missing argument 'trace'" in r.output
    # the listing runs nothing: a trace and options beside it were dropped without a word
    r = runner.invoke(app, ["cluster", "t.jsonl", "--list-routers", "--replicas", "3",
                            "--num-blocks", "4", "--json"])
    assert r.exit_code == 0 and "round_robin" in json.loads(r.stdout)
    assert r.stderr == ("warning: argument TRACE, option --replicas, option --num-blocks: no "
                        "effect with --list-routers (it lists the routers and exits)\n")
    r = runner.invoke(app, ["cluster", "--list-routers", "--json"])
    assert r.exit_code == 0 and r.stderr == ""


def _plot_run(tmp_path, replicas: int) -> None:
    path = tmp_path / "t.jsonl"
    _trace(path, n=20)
    r = runner.invoke(app, ["cluster", str(path), "--replicas", str(replicas), "--routers",
                            "round_robin,oracle", "--num-blocks", "24", "--plot",
                            str(tmp_path / "p")])
    assert r.exit_code == 0, r.output


def test_cluster_plot(tmp_path):
    _plot_run(tmp_path, 2)
    assert (tmp_path / "p" / "cluster.png").read_bytes()[:4] == b"\x89PNG"


def test_the_balance_chart_says_which_bar_is_which_replica(tmp_path, monkeypatch):
    """The balance chart had one unlabelled colour per replica."""
    from kvcli import plots

    keys: list[list[str]] = []
    save = plots._Charts.save

    def keep(self, fig, name, dpi=100):
        keys.extend([t.get_text() for t in ax.get_legend().get_texts()] for ax in fig.axes)
        save(self, fig, name, dpi)
    monkeypatch.setattr(plots._Charts, "save", keep)
    _plot_run(tmp_path, 3)
    assert keys == [["hit rate", "capacity loss", "routing loss"],
                    ["even (1/3)", "replica 0", "replica 1", "replica 2"]]


def test_the_clock_warning_is_said_once_a_run(tmp_path):
    # 4 requests over 12 replicas: replicas 0-3 each warn of the default clock; that was 4
    # lines 'round_robin replica K: uncalibrated clock ...' (128 with 1,000 replicas), then
    # one a router ('round_robin replicas 0-3: ...', 'random replicas 2-3, 8-9: ...'): the
    # clock is one fact of the run, said once, plain
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"timestamp": i, "input_length": 40, "output_length": 2})
                            + "\n" for i in range(4)))
    r = runner.invoke(app, ["cluster", str(path), "--replicas", "12", "--num-blocks", "24",
                            "--routers", "round_robin,random,least_request", "--json"])
    assert r.exit_code == 0, r.output
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: uncalibrated clock: "), r.stderr
    assert json.loads(r.stdout)["warnings"] == [lines[0][len("warning: "):]]


def _timeless(text: str):
    """A cluster's JSON less its wall times (they differ run to run)."""
    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k != "wall_time_s"}
        return [strip(x) for x in v] if isinstance(v, list) else v
    return strip(json.loads(text))


def test_router_with_routers_and_a_lag_no_router_reads(tmp_path):
    path = tmp_path / "t.jsonl"
    _trace(path, n=8)
    base = ["cluster", str(path), "--num-blocks", "24", "--block-size", "16"]
    # --routers replaced a --router given with it, without a word
    r = runner.invoke(app, [*base, "--router", "llmd", "--routers", "round_robin"])
    assert r.exit_code == 2 and r.stdout == "", r.output
    assert r.stderr == ("error: option --router: give --router or --routers, not both "
                        "(--routers would replace --router llmd)\n")
    # a second --router replaced the first without a word (one row where two were asked):
    # repeated, it compares them as --routers does
    two = runner.invoke(app, [*base, "--router", "llmd", "--router", "round_robin", "--json"])
    plural = runner.invoke(app, [*base, "--routers", "llmd,round_robin", "--json"])
    assert two.exit_code == 0 and _timeless(two.stdout) == _timeless(plural.stdout), two.output
    assert [x["router"] for x in json.loads(two.stdout)["routers"]] == ["llmd", "round_robin"]
    r = runner.invoke(app, [*base, "--router", "llmd", "--router", "llmd"])
    assert r.exit_code == 2 and r.stderr == ("error: option --router: a router named twice in "
                                             "--router llmd --router llmd\n"), r.output
    r = runner.invoke(app, [*base, "--router", "llmd", "--router", "random", "--routers", "oracle"])
    assert r.exit_code == 2 and r.stderr == (
        "error: option --router: give --router or --routers, not both (--routers would replace "
        "--router llmd --router random)\n"), r.output
    # a lag on the events of routers that read none changed nothing, silently
    r = runner.invoke(app, [*base, "--routers", "round_robin,llmd", "--kv-event-lag-ms", "5",
                            "--json"])
    assert r.exit_code == 0, r.output
    line = ("option kv_event_lag_ms: no effect: no chosen router reads KV events "
            "(round_robin, llmd)")
    assert json.loads(r.stdout)["warnings"][0] == line
    assert f"warning: {line}\n" in r.stderr
    r = runner.invoke(app, [*base, "--router", "llmd_precise", "--kv-event-lag-ms", "5"])
    assert r.exit_code == 0 and "kv_event_lag_ms" not in r.stderr, r.output


@pytest.mark.parametrize("args, said", [
    # each ran the same as without it, unsaid (a seed sweep of round_robin gave equal rows)
    (["--router", "least_request", "--metrics-interval-ms", "5000"],
     ("option metrics_interval_ms: no effect: no chosen router reads scraped metrics "
     "(least_request)")),
    (["--router", "round_robin", "--mode", "cache", "--metrics-interval-ms", "500"],
     ("option metrics_interval_ms: no effect: no chosen router reads scraped metrics "
      "(round_robin)")),
    # (in cache mode vllm_dp's samples still reset its optimistic counts: the hits move)
    (["--router", "vllm_dp", "--mode", "cache", "--metrics-interval-ms", "500"], None),
    (["--routers", "round_robin,oracle", "--seed", "9"],
     "option seed: no effect: no chosen router draws at random (round_robin, oracle)"),
    (["--replicas", "1", "--router", "llmd", "--router-opt", "prefix_weight=9"],
     ("the router, its options and seed change neither where requests go nor the hits with 1 "
      "replica (only the routers' scores, predictions and decision lines)")),
    (["--router", "llmd", "--router-opt", "lru_capacity_per_server=1"],
     "router llmd option lru_capacity_per_server: no effect with auto_tune=true"),
    (["--router", "dynamo", "--router-opt", "router_ttl_secs=5"],
     "router dynamo option router_ttl_secs: no effect with use_kv_events=true"),
    (["--router", "llmd", "--metrics-interval-ms", "5000", "--seed", "9"], None),
    (["--router", "dynamo", "--router-opt", "use_kv_events=false", "--router-opt",
      "router_ttl_secs=5"], None),
])
def test_cluster_options_no_chosen_router_reads_are_said(tmp_path, args, said):
    path = tmp_path / "t.jsonl"
    _trace(path, n=8)
    r = runner.invoke(app, ["cluster", str(path), "--num-blocks", "24", "--block-size", "16",
                            "--replicas", "2", *args, "--json"])
    assert r.exit_code == 0, r.output
    notes = [w for w in json.loads(r.stdout)["warnings"] if "uncalibrated" not in w]
    assert notes == ([said] if said else [])


def test_stats_of_a_cluster_folder_with_a_replica_missing_or_twice(tmp_path):
    import gzip
    import shutil

    path = tmp_path / "t.jsonl"
    _trace(path, n=8)
    ev = tmp_path / "ev"
    assert runner.invoke(app, ["cluster", str(path), "--replicas", "2", "--num-blocks", "24",
                               "--block-size", "16", "--events", str(ev)]).exit_code == 0
    folder = ev / "round_robin"
    # replica-0 gone: its row 0 showed replica-1's stream
    gap = tmp_path / "gap"
    shutil.copytree(folder, gap)
    (gap / "replica-0.events.jsonl").unlink()
    r = runner.invoke(app, ["stats", str(gap)])
    assert r.exit_code == 2 and r.stdout == "", r.output
    assert r.stderr == (f"error: {gap}: no replica-0.events.jsonl (found replica-1.events.jsonl)"
                        ": a kvcli cluster --events folder holds one stream per replica, "
                        "replica-0 to replica-(N-1)\n")
    # replica 1 in two files (.gz and not): counted as replicas 1 and 2
    twice = tmp_path / "twice"
    shutil.copytree(folder, twice)
    (twice / "replica-1.events.jsonl.gz").write_bytes(
        gzip.compress((folder / "replica-1.events.jsonl").read_bytes()))
    r = runner.invoke(app, ["stats", str(twice)])
    assert r.exit_code == 2 and r.stderr.startswith(f"error: {twice}: two streams of replica 1:")
    assert runner.invoke(app, ["stats", str(folder)]).exit_code == 0
