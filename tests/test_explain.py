"""`kvcli replay TRACE --explain ID` tells one request's story consistently with `--events`,
`--requests` and `--steps` of the same replay (the shipped multi-turn sample, 2,048 blocks:
evictions, later hits on its blocks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

SAMPLE = str(Path(__file__).resolve().parents[1] / "traces" / "multiturn-chat.jsonl")
OPTS = ["--block-size", "16", "--num-blocks", "2048"]
runner = CliRunner()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("explain")
    ev, req = tmp / "ev.jsonl", tmp / "req.jsonl"
    res = runner.invoke(app, ["replay", SAMPLE, *OPTS, "--events", str(ev), "--requests",
                              str(req), "--json"])
    assert res.exit_code == 0, res.output
    events = [json.loads(x) for x in ev.read_text().splitlines()]
    reqs = {r["id"]: r for r in (json.loads(x) for x in req.read_text().splitlines())}
    return events, reqs


@pytest.mark.parametrize("rid", ["5", "40", "200"])
def test_the_story_agrees_with_the_event_stream(run, rid):
    events, reqs = run
    res = runner.invoke(app, ["replay", SAMPLE, *OPTS, "--explain", rid, "--json"])
    assert res.exit_code == 0, res.output
    story = json.loads(res.stdout)
    assert story["request"] == rid
    # the replay's warnings, on stderr and in the JSON, as a plain replay's (the clock's here)
    assert len(story["warnings"]) == 1 and story["warnings"][0].startswith("uncalibrated clock")
    assert res.stderr == f"warning: {story['warnings'][0]}\n"
    # its own lines: the stream's, kind for kind and block for block
    kinds = {"arrive": "arrived", "admit": None, "touch": "hit cached blocks",
             "allocate": "allocated", "cache": "cached", "free": "freed",
             "preempt": "preempted", "finish": "finished"}
    mine = [e for e in events if e.get("req") == rid and e["kind"] in kinds]
    told = [s for s in story["events"] if not s["what"].startswith("its cached blocks")]
    assert len(mine) == len(told)
    for e, s in zip(mine, told):
        assert (e["step"], e["t_ms"]) == (s["step"], s["t_ms"])
        want = kinds[e["kind"]] or ("re-admitted" if e["resumed"] else "admitted")
        assert s["what"] == want
        if "blocks" in e:
            assert s["blocks"] == e["blocks"]
        if e["kind"] == "admit":
            assert s["hit_tokens"] == e["hit_tokens"]
    # the steps it ran in, against its request line
    r = reqs[rid]
    runs = story["scheduled"]
    assert runs[0]["from"] == r["first_scheduled_step"]
    total = sum((x["to"] - x["from"] + 1) * x["tokens"] for x in runs)
    if r["preemptions"] == 0:
        assert total == r["prompt_tokens"] - r["hit_tokens"] + r["output_tokens"] - 1
    # later hits and evictions of the blocks it cached, recounted from the raw stream
    held: dict[tuple, str] = {}
    hit_by: dict[str, int] = {}
    evicted_by: dict[str, int] = {}
    for e in events:
        key = [(e.get("group"), b) for b in e.get("blocks", [])]
        if e["kind"] == "cache":
            for k in key:
                held[k] = e["req"]
        elif e["kind"] == "evict":
            n = sum(held.pop(k, None) == rid for k in key)
            if n:
                evicted_by[e["req"]] = evicted_by.get(e["req"], 0) + n
        elif e["kind"] == "touch" and e["req"] != rid:
            n = sum(held.get(k) == rid for k in key)
            if n:
                hit_by[e["req"]] = hit_by.get(e["req"], 0) + n
    assert story["hit_by"] == hit_by and story["evicted_by"] == evicted_by
    if rid == "5":      # the story the docs tell: hit by four later turns, evicted under load
        assert hit_by == {"11": 21, "17": 21, "29": 21, "72": 21}
        assert sum(evicted_by.values()) == 26


def test_explain_refuses_an_unknown_request_and_other_outputs(tmp_path):
    res = runner.invoke(app, ["replay", SAMPLE, "--explain", "nope"])
    assert res.exit_code == 2
    assert res.stderr.strip() == ("error: option --explain: no request 'nope' in "
                                  f"{SAMPLE}")
    res = runner.invoke(app, ["replay", SAMPLE, "--explain", "5", "--steps",
                              str(tmp_path / "s.jsonl")])
    assert res.exit_code == 2 and "writes no other output (--steps given)" in res.stderr
    assert not (tmp_path / "s.jsonl").exists()


@pytest.mark.pure_python   # records calls
def test_explain_with_calls_adds_the_requests_call_trees_and_changes_nothing_else():
    plain = json.loads(runner.invoke(app, ["replay", SAMPLE, *OPTS, "--explain", "5",
                                           "--json"]).stdout)
    res = runner.invoke(app, ["replay", SAMPLE, *OPTS, "--explain", "5", "--calls", "--json"])
    assert res.exit_code == 0, res.output
    story = json.loads(res.stdout)
    calls = story.pop("calls")
    assert story == plain             # the general path the recorder runs gives the same run
    assert {c["args"]["request"] for c in calls} == {"5"}
    first = calls[0]
    assert (first["call"], first["args"]["step"], first["returns"]["hit_tokens"]) == \
        ("KVCacheManager.get_computed_blocks", 283, 1024)
    assert calls[-1]["call"] == "KVCacheManager.free" and calls[-1]["args"]["step"] == 356
    admit = next(c for c in calls if c["call"] == "KVCacheManager.allocate_slots")
    touch = [n for n in admit["children"] if n["call"].endswith("allocate_new_computed_blocks")]
    assert touch and touch[0]["children"][0]["children"][0]["call"] == "BlockPool.touch"
    # vLLM's free_blocks takes the blocks only (kvcore's event-stream `trace` lists showed)
    frees = [n for n in _nodes(calls[-1]) if n["call"] == "BlockPool.free_blocks"]
    assert frees and all(list(n["args"]) == ["ordered_blocks"] for n in frees)


def _nodes(node: dict) -> list[dict]:
    return [node, *(d for c in node["children"] for d in _nodes(c))]


def test_explain_tells_a_requests_cpu_tier_part_as_the_events_and_requests_say(tmp_path):
    """With a CPU tier the story left out the CPU hit and the load and store jobs (`--requests`
    said 176 CPU hit tokens that --explain never showed)."""
    trace = tmp_path / "t.jsonl"
    with open(SAMPLE) as f:
        trace.write_text("".join(line for _, line in zip(range(200), f)))
    opts = [str(trace), "--num-blocks", "256", "--kv-offloading-size", "4", "--warmup", "0.25"]
    ev, req = tmp_path / "ev.jsonl", tmp_path / "req.jsonl"
    assert runner.invoke(app, ["replay", *opts, "--events", str(ev), "--requests", str(req),
                               "--json"]).exit_code == 0
    line = next(r for r in map(json.loads, req.read_text().splitlines()) if r["id"] == "11")
    events = [json.loads(x) for x in ev.read_text().splitlines()]
    jobs = {e["job"]: e["kind"][8:] for e in events
            if e["kind"] in ("offload_load", "offload_store") and e.get("req") == "11"}
    story = json.loads(runner.invoke(app, ["replay", *opts, "--explain", "11",
                                           "--json"]).stdout)["events"]
    admit = next(e for e in story if e["what"] == "admitted")
    assert admit["cpu_hit_tokens"] == line["cpu_hit_tokens"] > 0
    started = {e["job"]: e["what"] for e in story if e["what"].endswith(" started")}
    done = {e["job"]: e["what"] for e in story if e["what"].endswith(" done")}
    assert started == {j: f"CPU tier {k} started" for j, k in jobs.items()} and jobs
    assert done == {j: f"CPU tier {k} done" for j, k in jobs.items()}


def test_an_interrupted_story_is_the_story_so_far(monkeypatch):
    # (Ctrl-C ended in a KeyError traceback, exit 1: the step lines' last, {"interrupted":
    # true}, has no 'scheduled')
    import kvcore.engine.replay as replay_module

    real = replay_module.replay

    def cut(*args, **kw):
        done = [0]

        def progress(n: int = 1) -> None:
            done[0] += n
            if done[0] == 40:
                raise KeyboardInterrupt
        return real(*args, **kw, progress=progress)

    monkeypatch.setattr(replay_module, "replay", cut)
    res = runner.invoke(app, ["replay", SAMPLE, *OPTS, "--explain", "5", "--json"])
    assert res.exit_code == 130, res.output
    story = json.loads(res.stdout)
    assert story["interrupted"] is True and story["events"][0]["what"] == "arrived"
    assert res.stderr.splitlines()[-1] == "interrupted: the story so far"


def test_a_warm_up_changes_no_story_and_is_said():
    # the story was byte-identical with --warmup 0.5, unsaid
    plain = json.loads(runner.invoke(app, ["replay", SAMPLE, *OPTS, "--explain", "5",
                                           "--json"]).stdout)
    res = runner.invoke(app, ["replay", SAMPLE, *OPTS, "--explain", "5", "--warmup", "0.5",
                              "--json"])
    assert res.exit_code == 0, res.output
    story = json.loads(res.stdout)
    said = ("option --warmup: no effect with --explain: the story has no count to leave the "
            "warm-up's requests out of")
    assert story.pop("warnings") == [said, *plain.pop("warnings")]
    assert story == plain and f"warning: {said}\n" in res.stderr
