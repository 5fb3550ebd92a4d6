"""`kvcli sweep`'s spec, grid and ids (kvcore/sweep), and bad specs through the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.sweep.grid import expand, file_sha256, job_id
from kvcore.sweep.results import read_results
from kvcore.sweep.spec import load_spec, spec_from_flags

runner = CliRunner()
CHAT = "traces/multiturn-chat.jsonl"
PREFIX = "traces/shared-prefix.jsonl"


def _spec(tmp_path, text: str, name: str = "s.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


SPEC = f"""command = "replay"
traces = ["{{root}}/{CHAT}"]

[options]
max_num_seqs = 64

[grid]
num_blocks = [512, 1024]
eviction_policy = ["lru", "arc"]
kv_offloading_size = [1, 2.5]
"""


def test_grid_order_ids_and_the_same_jobs_from_flags(tmp_path):
    import os

    root = os.getcwd()
    plan = expand(load_spec(str(_spec(tmp_path, SPEC.format(root=root)))))
    assert len(plan.jobs) == 8 and plan.swept == ["num_blocks", "eviction_policy",
                                                   "kv_offloading_size"]
    # the last option changes fastest; indexes are positions
    assert [(j.config["num_blocks"], j.config["eviction_policy"],
             j.config["kv_offloading_size"]) for j in plan.jobs[:3]] == [
        (512, "lru", 1.0), (512, "lru", 2.5), (512, "arc", 1.0)]
    assert [j.index for j in plan.jobs] == list(range(8))
    assert all(j.config["max_num_seqs"] == 64 for j in plan.jobs)
    # the id: the sha256 of the command, the options and the trace's bytes
    sha = file_sha256(f"{root}/{CHAT}")
    assert all(j.trace_sha256 == sha for j in plan.jobs)
    assert plan.jobs[0].job_id == job_id("replay", plan.jobs[0].config, sha)[1]
    assert len({j.job_id for j in plan.jobs}) == 8
    # the same jobs again, from the flags, in another order of the options: the same ids
    flags = expand(spec_from_flags("replay", [f"{root}/{CHAT}"], [
        "kv_offloading_size=2.5,1", "eviction_policy=arc,lru", "num_blocks=1024,512",
        "max_num_seqs=64"]))
    assert {j.job_id for j in flags.jobs} == {j.job_id for j in plan.jobs}
    # the same trace content under another path: the same ids
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(Path(root, CHAT).read_bytes())
    moved = expand(spec_from_flags("replay", [str(copy)], [
        "num_blocks=512,1024", "eviction_policy=lru,arc", "kv_offloading_size=1,2.5",
        "max_num_seqs=64"]))
    assert [j.job_id for j in moved.jobs] == [j.job_id for j in plan.jobs]


def test_job_id_is_stable():
    """The canonical form and its id never change (a results file from an older kvcli resumes)."""
    canonical, jid = job_id("replay", {"num_blocks": 512, "eviction_policy": "lru",
                                       "kv_offloading_size": 1.0}, "0" * 64)
    assert canonical == ('{"command":"replay","config":{"eviction_policy":"lru",'
                         '"kv_offloading_size":1.0,"num_blocks":512},"trace_sha256":"'
                         + "0" * 64 + '"}')
    assert jid == "1ff7384766e8dcd7"
    # the command is part of the job
    assert job_id("replay", {"kv_offloading_size": 1.0}, "a")[1] != \
        job_id("cluster", {"kv_offloading_size": 1.0}, "a")[1]


def test_a_file_an_option_names_counts_by_its_bytes_not_its_path(tmp_path):
    """model_config given as s2/cfg.json from one folder and cfg.json from another made new ids:
    a resumed sweep ran every job again, two copies of each in the results."""
    (tmp_path / "s2").mkdir()
    for p in (tmp_path / "cfg.json", tmp_path / "s2" / "cfg.json"):
        p.write_text('{"num_hidden_layers": 2}')
    one = job_id("replay", {"model_config": str(tmp_path / "cfg.json")}, "a")
    two = job_id("replay", {"model_config": str(tmp_path / "s2" / "cfg.json")}, "a")
    assert one[1] == two[1] and one[0] != two[0]        # the same job; each keeps its path
    (tmp_path / "s2" / "cfg.json").write_text('{"num_hidden_layers": 3}')
    assert job_id("replay", {"model_config": str(tmp_path / "s2" / "cfg.json")}, "a")[1] != one[1]
    # a file that cannot be read keeps its path (the job's check refuses it, naming the option)
    assert job_id("replay", {"calibration": "nope.json"}, "a")[1] != \
        job_id("replay", {"calibration": "nope2.json"}, "a")[1]


def test_json_spec_and_two_traces(tmp_path):
    import os

    root = os.getcwd()
    doc = {"command": "cluster", "traces": [f"{root}/{CHAT}", f"{root}/{PREFIX}"],
           "options": {"num_blocks": 512, "router_opt": ["llmd.prefix_weight=2"]},
           "grid": {"router": ["round_robin", "llmd"], "replicas": [1, 2]}}
    p = _spec(tmp_path, json.dumps(doc, indent=1), "s.json")
    plan = expand(load_spec(str(p)))
    assert len(plan.jobs) == 8 and plan.swept == ["trace", "router", "replicas"]
    assert len(plan.traces) == 2
    copts = plan.jobs[1].cluster_options()
    assert copts.replicas == 2 and copts.routers == (("round_robin", ()),)
    assert plan.jobs[3].cluster_options().routers == (("llmd", (("prefix_weight", "2"),)),)
    assert "router_opt" not in plan.jobs[0].config      # llmd's option: not a round_robin job's


def test_a_json_spec_with_a_key_twice_is_refused_at_the_repeat(tmp_path):
    """TOML refuses a key given twice; JSON kept the last one, and the sweep ran it unsaid."""
    import os

    text = (f'{{"traces": ["{os.getcwd()}/{CHAT}"],\n "grid": {{"num_blocks": [64, 128],\n'
            '  "max_num_seqs": [4],\n  "num_blocks": [256]}}\n')
    p = _spec(tmp_path, text, "s.json")
    with pytest.raises(InputError) as err:
        load_spec(str(p))
    assert str(err.value) == (f"{p}:4: field 'grid.num_blocks': key 'num_blocks' is given "
                              "twice in one object (JSON would keep the last without a word): "
                              "give it once")
    p.write_text(text.replace('"num_blocks": [256]', '"block_size": [16]'))
    assert load_spec(str(p)).grid[0] == ("num_blocks", (64, 128))
    # the repeat's own line, not the key's last one in the file (another object's: line 5)
    p.write_text('{"options": {"num_blocks": 64, "x": {"num_blocks": 1},\n'
                 '  "block_size": 16,\n "num_blocks": 128},\n'
                 ' "grid": {"eviction_policy": ["lru"],\n  "num_blocks": [256]}}\n')
    with pytest.raises(InputError) as err:
        load_spec(str(p))
    assert (err.value.line, err.value.field) == (3, "options.num_blocks")
    # inside lists: the indexes too (it said 'grid.sliding_window', no such option)
    p.write_text('{"grid": {"groups": [[{"type": "full_attention"}],\n'
                 '  [{"type": "sliding_window", "sliding_window": 64, "x": [1, "]", {}],\n'
                 '    "sliding_window": 128}]]}}\n')
    with pytest.raises(InputError) as err:
        load_spec(str(p))
    assert (err.value.line, err.value.field) == (3, "grid.groups[1][0].sliding_window")


BAD = [
    # (spec body after the traces line, line, key, words)
    ("[options]\nnum_blocks = 0\n[grid]\nblock_size = [16]\n", 4, "options.num_blocks", ">= 2"),
    ("[grid]\nnum_blocks = [512, 1024]\nmax_num_seq = [1, 2]\n", 5, "grid.max_num_seq",
     "did you mean max_num_seqs"),
    ("[grid]\nnum_blocks = [512, \"x\"]\n", 4, "grid.num_blocks", "must be an integer"),
    ("[grid]\neviction_policy = [\"lru\", \"mru\"]\n", 4, "grid.eviction_policy",
     "must be lru or arc"),
    ("[grid]\nwatermark = [0.1, 1.5]\n", 4, "grid.watermark", "in [0, 1)"),
    ("[grid]\nnum_blocks = 512\n", 4, "grid.num_blocks", "non-empty list"),
    ("[grid]\nnum_blocks = [512, 512]\n", 4, "grid.num_blocks", "given twice"),
    ("[grid]\nreplicas = [1, 2]\n", 4, "grid.replicas", "a cluster option"),
    ("colour = 1\n[grid]\nnum_blocks = [512]\n", 3, "colour", "unknown key"),
    ("[grid]\nnum_blocks = [512\n", 4, None, "not TOML: Unclosed array"),
    ("[grid]\nnum_blocks = [512,, 1]\nblock_size = [16]\n", 4, None, "not TOML"),
]


@pytest.mark.parametrize("body,line,key,words", BAD)
def test_bad_specs_exit_2_naming_the_key_and_line_before_any_job(tmp_path, body, line, key,
                                                                  words):
    import os

    p = _spec(tmp_path, f'command = "replay"\ntraces = ["{os.getcwd()}/{CHAT}"]\n' + body)
    r = runner.invoke(app, ["sweep", str(p)])
    assert r.exit_code == 2, r.output
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"error: {p}:{line}: ") and words in err, err
    if key is not None:
        assert f"field '{key}'" in err, err
    assert not (tmp_path / "s.results.jsonl").exists()      # no job ran


def test_stdin_is_no_trace_to_sweep(tmp_path):
    # (it said "trace - does not exist", as if a file were missing)
    said = "- (stdin) cannot be swept: every job reads its trace file again; save it to a file"
    with pytest.raises(InputError) as err:
        load_spec(str(_spec(tmp_path, 'traces = ["-"]\n')))
    assert (str(err.value).split(": ", 1)[1], err.value.field) == (f"field 'traces': {said}",
                                                                   "traces")
    with pytest.raises(InputError) as err:
        spec_from_flags("replay", ["-"], [])
    assert (err.value.message, err.value.field) == (said, "trace")


def test_missing_trace_and_bad_flags_exit_2(tmp_path):
    p = _spec(tmp_path, 'command = "replay"\ntraces = ["nope.jsonl"]\n[grid]\nnum_blocks = '
              '[512, 1024]\n')
    r = runner.invoke(app, ["sweep", str(p)])
    assert r.exit_code == 2
    assert f"{p}:2: field 'traces': trace {tmp_path}/nope.jsonl does not exist" in r.stderr
    for args, words in (
            (["--trace", "nope.jsonl", "--set", "num_blocks=2,4"], "option --trace: nope"),
            (["--trace", CHAT, "--set", "num_blocks=2,4x"], ("option --set: num_blocks: "
                                                             "must be an integer, got '4x'")),
            (["--trace", CHAT, "--set", "num_blocks"], "expected KEY=V1,V2"),
            (["--trace", CHAT, "--set", "num_blocks=1,4"], "num_blocks: must be >= 2"),
            (["--trace", CHAT, "--set", "num_blocks=800,400"], "option --results: needed"),
            (["--trace", CHAT, "--set", "router=x,y", "--command", "cluster"],
             "unknown router 'x'"),
            (["--trace", CHAT, "--set", "num_blocks=8,4", "--executor", "dask"],
             "unknown executor 'dask'"),
            (["--trace", CHAT, "--set", "num_blocks=8,4", "--metrics", "speed"],
             "unknown metric 'speed'"),
            ([str(p), "--trace", CHAT], "not both")):
        r = runner.invoke(app, ["sweep", *args, "--results", str(tmp_path / "r.jsonl")]
                          if "needed" not in words else ["sweep", *args])
        assert r.exit_code == 2, (args, r.output)
        assert words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "r.jsonl").exists()


def test_without_ray_the_ray_executor_exits_2_with_the_install_command(tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "ray" else real(name, *a))
    r = runner.invoke(app, ["sweep", "--trace", CHAT, "--set", "num_blocks=512,1024",
                            "--results", str(tmp_path / "r.jsonl"), "--executor", "ray"])
    assert r.exit_code == 2
    assert r.stderr.strip() == ("error: option --executor: the ray executor needs ray, which "
                                "is not installed: pip install 'kvcli[ray]'")


LINE = '"trace": "t.jsonl", "trace_sha256": "00", "config": {}, "result": {}'


def test_results_reader_skips_a_cut_line_and_refuses_a_foreign_file(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text(f'{{"job_id": "a", {LINE}, "index": 1}}\n'
                 f'{{"job_id": "b", {LINE}, "index": 0}}\n{{"job_id": "c", "co')
    res = read_results(str(p))
    assert res.partial_tail and [d["job_id"] for d in res.sorted()] == ["b", "a"]
    p.write_text(f'{{"x": 1}}\n{{"job_id": "b", {LINE}}}\n')
    with pytest.raises(InputError, match="r.jsonl:1: not a results line"):
        read_results(str(p))


@pytest.mark.parametrize("line, words", [
    ('{"job_id": "a", "config": {}, "result": {}}', "field 'trace': missing"),
    (f'{{"job_id": "a", {LINE}, "command": "bogus"}}',
     "field 'command': must be one of replay, cluster, got 'bogus'"),
    (f'{{"job_id": "a", {LINE}, "index": "zz"}}', "field 'index': must be an integer"),
    (f'{{"job_id": "a", {LINE}, "index": true}}', "field 'index': must be an integer"),
    (f'{{"job_id": 7, {LINE}}}', "field 'job_id': must be a string, got 7"),
    (f'{{"job_id": "a", {LINE}, "wall_time_s": "1"}}', "field 'wall_time_s': must be a number"),
])
def test_sweep_report_names_a_results_lines_bad_field(tmp_path, line, words):
    p = tmp_path / "r.jsonl"
    p.write_text(f'{{"job_id": "b", {LINE}, "index": 3}}\n{line}\n')
    r = runner.invoke(app, ["sweep", "report", str(p)])
    assert r.exit_code == 2 and f"r.jsonl:2: {words}" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_points_differing_only_in_another_routers_options_are_one_job(tmp_path):
    import os

    doc = {"command": "cluster", "traces": [f"{os.getcwd()}/{PREFIX}"],
           "options": {"num_blocks": 256},
           "grid": {"router": ["llmd", "random"], "seed": [0, 7],
                    "router_opt": ["llmd.prefix_weight=0", "llmd.prefix_weight=3"]}}
    plan = expand(load_spec(str(_spec(tmp_path, json.dumps(doc), "s.json"))))
    # llmd: 2 seeds x 2 weights; random: 2 seeds (its 2 weights are the same job)
    assert [(j.config["router"], j.config["seed"], j.config.get("router_opt"))
            for j in plan.jobs] == [
        ("llmd", 0, ["llmd.prefix_weight=0"]), ("llmd", 0, ["llmd.prefix_weight=3"]),
        ("llmd", 7, ["llmd.prefix_weight=0"]), ("llmd", 7, ["llmd.prefix_weight=3"]),
        ("random", 0, None), ("random", 7, None)]
    assert plan.folded == 2 and [j.index for j in plan.jobs] == list(range(6))
    # the same trace twice is still refused
    doc["traces"] *= 2
    with pytest.raises(InputError, match="listed twice"):
        expand(load_spec(str(_spec(tmp_path, json.dumps(doc), "s2.json"))))


def test_a_results_file_that_cannot_be_appended_to_exits_2_before_any_job(tmp_path):
    for path, words in ((tmp_path / "no" / "r.jsonl", "does not exist"),
                        (tmp_path / "r.jsonl.gz", "not - or .gz"),
                        (tmp_path, "is a folder")):
        r = runner.invoke(app, ["sweep", "--trace", CHAT, "--set", "num_blocks=512,1024",
                                "--results", str(path)])
        assert r.exit_code == 2 and "option --results: " in r.stderr and words in r.stderr, \
            r.stderr
        assert "sweep:" not in r.stderr                 # nothing started
