"""Every key a JSON output can emit is named in the doc that owns that output ("JSON keys are
stable and documented"): each command runs in the configurations that add keys, every key is
collected at every level, and each must appear in its docs inside backticks (`key`, or inside a
code span such as `{count, mean, p50}`). Adding a key without documenting it fails here."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()

# Objects keyed by data (request ids, job ids, step numbers, reasons, scorer names, a vLLM
# call's argument names and return values): their own keys are not JSON keys of the format.
MAPS = {"scheduled", "admitted", "lookups", "load_jobs", "store_jobs", "store_offers",
        "cached_by", "hit_by", "evicted_by", "args", "returns", "scores", "decisions",
        "hits_by_source", "true_hits"}

REPLAY_DOCS = ("docs/replay.md", "docs/clock.md", "docs/offload.md", "docs/replay-engine.md")
EVENT_DOCS = ("docs/events.md", "docs/events-requests.md", *REPLAY_DOCS)


@cache
def doc_names(doc: str) -> frozenset[str]:
    """The identifiers inside the doc's code spans (fenced blocks left out)."""
    text = re.sub(r"^```.*?^```", "", (ROOT / doc).read_text(), flags=re.DOTALL | re.MULTILINE)
    names: set[str] = set()
    for span in re.findall(r"`([^`]+)`", text):
        names.update(re.findall(r"[A-Za-z_][A-Za-z0-9_-]*", span))
    return frozenset(names)


def keys(obj, path: str = ""):
    """(path, key) for every key at every level, maps' data keys left out."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            p = f"{path}.{k}" if path else k
            if not k.isdigit():            # (percent levels, ids: data)
                yield p, k
            if k not in MAPS:
                yield from keys(v, p)
    elif isinstance(obj, list):
        for x in obj:
            yield from keys(x, path + "[]")


def undocumented(docs, docs_obj) -> dict[str, str]:
    names = frozenset().union(*(doc_names(d) for d in docs))
    return {k: p for p, k in keys(docs_obj) if k not in names}


def run(*args) -> str:
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, (args, r.output[-2000:])
    return r.stdout


def lines(text: str) -> list[dict]:
    return [json.loads(x) for x in text.splitlines() if x.strip()]


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    """The sample chat's first 60 requests: every key, a fraction of the time."""
    path = tmp_path_factory.mktemp("keys") / "chat.jsonl"
    src = (ROOT / "traces" / "multiturn-chat.jsonl").read_text().splitlines()
    path.write_text("\n".join(src[:60]) + "\n")
    return path


def check(docs, obj, what):
    missing = undocumented(docs, obj)
    assert not missing, f"{what}: keys not named in {', '.join(docs)}: {missing}"


REPLAYS = {
    "plain": [],
    "cache": ["--mode", "cache"],
    "roofline_offload": ["--model", "llama-3.1-8b", "--gpu", "h100", "--kv-offloading-size", "1"],
    "hybrid": ["--model", "gpt-oss-20b", "--gpu", "h200", "--tp", "2", "--kv-cache-dtype", "fp8"],
    "fixed": ["--clock", "fixed:20"],
    "linear": ["--clock", "linear:1,0.1,0.5", "--arrivals", "ignore"],
    "step": ["--arrivals", "step"],
    "explain": ["--explain", "5", "--calls"],
}


# --calls records the stack's calls, which only the pure-Python stack allows
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.pure_python)
                                  if "--calls" in REPLAYS[n] else n for n in REPLAYS])
def test_replay_summary_keys(trace, tmp_path, name):
    args = ["replay", trace, "--num-blocks", "512", *REPLAYS[name], "--json"]
    files = {}
    if name in ("plain", "roofline_offload"):
        for f in ("requests", "steps", "events"):
            files[f] = tmp_path / f"{f}.jsonl"
            args += [f"--{f}", files[f]]
    check(REPLAY_DOCS, json.loads(run(*args)), f"replay {name}")
    for f, path in files.items():
        for line in lines(path.read_text()):
            check(EVENT_DOCS if f == "events" else REPLAY_DOCS, line, f"replay --{f} ({name})")


@pytest.mark.parametrize("extra", [[], ["--no-async-scheduling"], ["--kv-offloading-size", "1"]])
def test_replay_vllm_events_and_sync_steps(trace, tmp_path, extra):
    ev, st = tmp_path / "v.jsonl", tmp_path / "s.jsonl"
    run("replay", trace, "--num-blocks", "512", "--events", ev, "--events-format", "vllm",
        "--steps", st, *extra)
    for line in lines(ev.read_text()):
        check(EVENT_DOCS, line, "vllm events")
    for line in lines(st.read_text()):
        check(REPLAY_DOCS, line, "steps")


def test_cluster_keys(trace, tmp_path):
    dec = tmp_path / "dec.jsonl"
    routers = ("round_robin,random,least_request,power_of_two,oracle,vllm_dp,llmd,llmd_precise,"
               "dynamo,sglang,aibrix")
    doc = json.loads(run("cluster", trace, "--num-blocks", "512", "--routers", routers,
                         "--decisions", dec, "--json"))
    check(("docs/cluster.md",), doc, "cluster")
    for line in lines(dec.read_text()):
        check(("docs/cluster.md",), line, "cluster --decisions")
    off = json.loads(run("cluster", trace, "--num-blocks", "512", "--model", "llama-3.1-8b",
                         "--gpu", "h100", "--kv-offloading-size", "1", "--routers",
                         "llmd_precise", "--json"))
    check(("docs/cluster.md",), off, "cluster with a model, a GPU and a CPU tier")


@pytest.mark.parametrize("args", [
    ["llama-3.1-8b", "--gpu-memory-gib", "80"],
    ["gpt-oss-20b", "--gpu-memory-gib", "80", "--kv-offloading-size", "4"],
    ["gemma-3-27b", "--gpu-memory-gib", "80", "--tp", "2"],
    ["jamba-v0.1", "--gpu-memory-gib", "200"],
    ["--list"],
])
def test_config_keys(args):
    check(("docs/config.md",), json.loads(run("config", *args, "--json")), "config")


def test_stats_and_curve_keys(trace):
    # (a hybrid model with a tier adds the `cpu_window` miss reason)
    for extra in ([], ["--model", "llama-3.1-8b", "--gpu", "h100", "--kv-offloading-size", "1"],
                  ["--model", "gpt-oss-20b", "--kv-offloading-size", "0.05"]):
        doc = json.loads(run("stats", trace, "--num-blocks", "512", *extra, "--json"))
        check(("docs/stats.md", "docs/clock.md"), doc, "stats")
    doc = json.loads(run("curve", trace, "--policies", "lru,optimal", "--capacities",
                         "256,1024", "--json"))
    check(("docs/curve.md",), doc, "curve")


def test_clock_keys():
    check(("docs/clock.md",), json.loads(run("clock", "gpus", "--json")), "clock gpus")
    for m in ("llama-3.1-8b", "gpt-oss-20b"):
        doc = json.loads(run("clock", "explain", "--model", m, "--gpu", "h200", "--tp", "2",
                             "--case", "decode=64*1@4097", "--case", "prefill=2048", "--json"))
        check(("docs/clock.md",), doc, f"clock explain {m}")


@pytest.mark.pure_python      # --calls (as above)
def test_script_keys():
    for ops in ("four-paths", "decode-paths"):
        for line in lines(run("script", ROOT / "traces" / f"{ops}.ops.jsonl", "--calls",
                              "--json")):
            check(("README.md",), line, "script")


def test_bench_and_gen_keys():
    check(("README.md",), json.loads(run("bench", "--json", "--n", "40")), "bench")
    for kind in ("multiturn", "shared-prefix"):
        for line in lines(run("gen", kind, "--seed", "1"))[:50]:
            check(("docs/replay.md",), line, f"gen {kind}")
    for line in lines(run("gen", "b2b", "--requests", "20", "--tenants", "2", "--users", "2")):
        check(("docs/replay.md",), line, "gen b2b")


@pytest.mark.parametrize("command", ["replay", "cluster"])
def test_sweep_keys(trace, tmp_path, command):
    res = tmp_path / "r.jsonl"
    doc = json.loads(run("sweep", "--trace", trace, "--command", command, "--set",
                         "num_blocks=512", "--results", res, "--json"))
    docs = ("docs/sweep.md", *REPLAY_DOCS, "docs/cluster.md")
    check(docs, doc, f"sweep {command}")
    for line in lines(res.read_text()):
        check(docs, line, f"sweep {command} results")
    check(docs, json.loads(run("sweep", "report", res, "--json")), "sweep report")


def test_a_missing_entry_is_caught():
    """The check itself: a key no doc names is reported."""
    assert undocumented(("docs/replay.md",), {"hit_rate": 1, "no_such_key_xyz": {"zz_nested": 1}}) \
        == {"no_such_key_xyz": "no_such_key_xyz", "zz_nested": "no_such_key_xyz.zz_nested"}
