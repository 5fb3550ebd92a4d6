"""The docs' JSON key tables do not promise keys the outputs lack: every key a `| key | ... |`
table names in its first column is in the output it documents (test_json_keys_documented.py
checks the other way: every key the output has is named somewhere in its doc). A key renamed or
dropped in the code, with its row left in the table, fails here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

ROOT = Path(__file__).resolve().parents[1]


def table_keys(doc: str, heading: str) -> list[str]:
    """The names in the first column of the first `| key |` table after the line `heading`:
    each backticked name, `a.b` (or `a[].b`) a key inside the object of `a` (or its items)."""
    lines = (ROOT / doc).read_text().splitlines()
    at = lines.index(heading)
    start = next(i for i in range(at, len(lines)) if re.match(r"\| key \|", lines[i]))
    names: list[str] = []
    for ln in lines[start + 2:]:
        if not ln.startswith("|"):
            break
        names += [n.replace("[]", "") for n in re.findall(r"`([\w.\[\]]+)`", ln.split("|")[1])]
    assert names, f"{doc}: no key table after {heading!r}"
    return names


def lacking(names: list[str], *objs: dict) -> list[str]:
    """The names no object has (`a.b`: the key b of a's object, or of its list's first item)."""
    def has(obj, path: list[str]) -> bool:
        for part in path:
            if isinstance(obj, list):
                obj = obj[0] if obj else {}
            if not isinstance(obj, dict) or part not in obj:
                return False
            obj = obj[part]
        return True
    return [n for n in names if not any(has(o, n.split(".")) for o in objs)]


def run_json(*args) -> dict:
    r = CliRunner().invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, (args, r.output[-2000:])
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    """The sample chat's first 60 requests."""
    path = tmp_path_factory.mktemp("tables") / "chat.jsonl"
    src = (ROOT / "traces" / "multiturn-chat.jsonl").read_text().splitlines()
    path.write_text("\n".join(src[:60]) + "\n")
    return path


def test_the_table_reader_reads_the_rows():
    assert table_keys("docs/stats.md", "### `preemption`")[:3] == [
        "preemptions", "recomputed_tokens", "victims"]
    assert lacking(["a.b", "c"], {"a": [{"b": 1}]}) == ["c"]


def test_replay_summary_table(trace, tmp_path):
    plain = run_json("replay", trace, "--num-blocks", "512", "--json")
    # the keys the table says appear only with a clock, a CPU tier or a live output
    extra = run_json("replay", trace, "--num-blocks", "512", "--model", "llama-3.1-8b", "--gpu",
                     "h100", "--kv-offloading-size", "1", "--metrics", tmp_path / "m.prom",
                     "--json")
    # and speculative decoding's (not with a CPU tier)
    spec = run_json("replay", trace, "--num-blocks", "512", "--num-speculative-tokens", "2",
                    "--spec-acceptance-rate", "0.5", "--json")
    names = table_keys("docs/replay.md", "## The summary (`--json`)")
    assert not lacking(names, plain, extra, spec)
    assert not lacking(table_keys("docs/replay-engine.md", "## Latency"),
                       plain["latency"])


def test_stats_tables(trace):
    plain = run_json("stats", trace, "--num-blocks", "512", "--json")
    tier = run_json("stats", trace, "--num-blocks", "512", "--model", "llama-3.1-8b", "--gpu",
                    "h100", "--kv-offloading-size", "1", "--json")
    assert not lacking(table_keys("docs/stats.md", "## JSON (`--json`): one document"),
                       plain, tier)
    for section in ("source", "memory", "eviction", "reuse", "misses", "preemption", "latency",
                    "cpu_tier"):
        names = table_keys("docs/stats.md", f"### `{section}`")
        # (`source.clock` is the summary's `clock`: only with a clock other than the default)
        names = [n for n in names if (section, n) != ("source", "clock")]
        assert not lacking(names, *(d[section] for d in (plain, tier) if d.get(section))), \
            section
    assert "clock" in tier["source"]


def test_config_table():
    doc = run_json("config", "llama-3.1-8b", "--gpu-memory-gib", "80", "--kv-offloading-size",
                   "16", "--json")
    names = table_keys("docs/config.md", "# `kvcli config`: the JSON document (`--json`)")
    assert not lacking(names, doc)


def test_curve_table(trace):
    doc = run_json("curve", trace, "--policies", "lru,optimal", "--capacities", "256,1024",
                   "--json")
    names = table_keys("docs/curve.md", "## Output")
    assert not lacking(names, doc)


def test_cluster_router_table(trace):
    doc = run_json("cluster", trace, "--num-blocks", "512", "--routers", "llmd_precise",
                   "--model", "llama-3.1-8b", "--gpu", "h100", "--kv-offloading-size", "1",
                   "--json")
    spec = run_json("cluster", trace, "--num-blocks", "512", "--routers", "round_robin",
                    "--num-speculative-tokens", "2", "--spec-acceptance-rate", "0.5", "--json")
    names = table_keys("docs/cluster.md", "## What you get")
    # (`live` needs a live output: docs/live.md's table, below)
    assert not lacking([n for n in names if n != "live"], doc["routers"][0],
                       spec["routers"][0])


def test_live_table(trace, tmp_path):
    # an ipc:// publisher needs no subscriber (no wait) and no free port; --realtime paces the
    # 13 simulated seconds at 1000x
    pytest.importorskip("zmq")
    doc = run_json("replay", trace, "--num-blocks", "512", "--metrics", tmp_path / "m.prom",
                   "--kv-events-endpoint", f"ipc://{tmp_path}/pub", "--kv-events-replay-endpoint",
                   f"ipc://{tmp_path}/replay", "--kv-events-wait-s", "0", "--realtime", "1000",
                   "--json")
    names = table_keys("docs/live.md", "## What kvcli adds (a replay is not a server)")
    assert "kv_events.replay_endpoint" in names
    assert not lacking(names, doc["live"])
