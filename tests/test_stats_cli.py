"""`kvcli stats` end to end: agreement with the replay's own totals, trace == events, bad streams."""

from __future__ import annotations

import json
import random
from pathlib import Path

import orjson
import pytest
from stats_streams import Stream
from typer.testing import CliRunner

from kvcli.app import app

runner = CliRunner()
# A replay that evicts and preempts: 12 requests over two shared prefixes, 13 usable blocks of 4.
FLAGS = ["--block-size", "4", "--num-blocks", "14", "--arrivals", "ignore",
         "--max-num-batched-tokens", "32"]


@pytest.fixture
def small_trace(tmp_path):
    rng = random.Random(1)
    base = [list(range(100, 120)), list(range(200, 212))]
    lines = []
    for i in range(12):
        prompt = base[i % 2] + [1000 + i * 10 + j for j in range(rng.randint(2, 9))]
        lines.append(json.dumps({"prompt_token_ids": prompt, "output_length": rng.randint(3, 12)}))
    path = tmp_path / "small.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def stats_json(*args) -> dict:
    res = runner.invoke(app, ["stats", *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def replay_json(trace: str, events, *flags) -> dict:
    res = runner.invoke(app, ["replay", trace, *flags, "--events", str(events), "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_stats_totals_equal_the_replay_summary(small_trace, tmp_path):
    events = tmp_path / "ev.jsonl"
    summary = replay_json(small_trace, events, *FLAGS)
    assert summary["evictions"] > 0 and summary["preemptions"] > 0   # the case is worth testing
    r = stats_json(str(events))
    assert r["source"]["requests"] == summary["requests"] == 12
    assert r["reuse"]["hit_tokens"] == summary["hit_tokens"]
    assert r["reuse"]["prompt_tokens"] == summary["prompt_tokens"]
    assert r["reuse"]["hit_rate"] == summary["hit_rate"]
    assert r["reuse"]["request_hit_rate_mean"] == pytest.approx(summary["request_hit_rate_mean"],
                                                                rel=1e-12)
    assert r["eviction"]["evictions"] == summary["evictions"]
    assert r["preemption"]["preemptions"] == summary["preemptions"]
    assert r["preemption"]["recomputed_tokens"] == summary["recomputed_tokens"]
    assert r["preemption"]["resumed_admissions"] == summary["preempted_admissions"]
    assert r["memory"]["peak_usage"] == summary["peak_usage"]
    assert r["source"]["summary_mismatches"] == {}
    # every prompt token is either hit or attributed to a reason
    m = r["misses"]
    assert m["missed_tokens"] + r["reuse"]["hit_tokens"] == r["reuse"]["prompt_tokens"]
    assert m["tokens"]["unknown"] == 0
    assert set(r) == {"schema_version", "source", "memory", "eviction", "reuse", "misses",
                      "preemption", "latency", "warnings"}


@pytest.mark.parametrize("mode", ["engine", "cache"])
def test_stats_of_a_trace_equals_stats_of_its_events(small_trace, tmp_path, mode):
    events = tmp_path / "ev.jsonl"
    replay_json(small_trace, events, "--mode", mode, *FLAGS)
    from_events = stats_json(str(events))
    from_trace = stats_json(small_trace, "--mode", mode, *FLAGS)
    assert from_trace == from_events
    assert from_trace["eviction"]["evictions"] > 0


def test_a_trace_on_stdin_gives_the_same_report(small_trace):
    res = runner.invoke(app, ["stats", "-", *FLAGS, "--json"],
                        input=Path(small_trace).read_bytes())
    assert res.exit_code == 0, res.output
    from_stdin = json.loads(res.stdout)
    from_file = stats_json(small_trace, *FLAGS)
    assert from_stdin["source"].pop("trace") == "-"
    assert from_file["source"].pop("trace") == small_trace
    assert from_stdin == from_file


def test_vllm_event_format_is_refused_clearly(small_trace, tmp_path):
    events = tmp_path / "vllm.jsonl"
    replay_json(small_trace, events, *FLAGS, "--events-format", "vllm")
    msg = _bad(tmp_path, [events.read_bytes()])
    assert "bad.jsonl:1: this is vLLM's KV event format" in msg


def test_stats_reads_stdin(tmp_path):
    s = Stream()
    s.at(0).arrive("A", 8).admit("A", 8, 0, [[1, 2]]).allocate("A", [1, 2])
    s.at(1).finish("A").free("A", [2, 1]).end()
    res = runner.invoke(app, ["stats", "-", "--json"], input=b"".join(s.lines()))
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["memory"]["peak_used_blocks"] == 2


def test_tables_and_timeline(tmp_path):
    s = Stream()
    s.at(0).arrive("A", 8).admit("A", 8, 0, [[1, 2]]).allocate("A", [1, 2])
    s.at(1).finish("A").free("A", [2, 1]).end()
    res = runner.invoke(app, ["stats", s.write(tmp_path / "e.jsonl")])
    assert res.exit_code == 0, res.output
    assert "Why prompt tokens missed" in res.stdout and "usage |" in res.stdout


def _bad(tmp_path, lines: list[bytes]) -> str:
    p = tmp_path / "bad.jsonl"
    p.write_bytes(b"".join(lines))
    res = runner.invoke(app, ["stats", str(p)])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    return res.stderr.strip()


def good_lines() -> list[bytes]:
    s = Stream()
    s.at(0).arrive("A", 8).admit("A", 8, 0, [[1, 2]]).allocate("A", [1, 2])
    s.cache("A", [1, 2], [1, 2])
    s.at(1).finish("A").free("A", [2, 1], evictable=[2, 1]).end()
    return s.lines()


def test_truncated_stream(tmp_path):
    lines = good_lines()
    msg = _bad(tmp_path, lines[:-1])                  # no `end`
    assert msg.endswith(f"bad.jsonl:{len(lines) - 1}: truncated stream: ends without an 'end' "
                        "(or 'interrupted') line")
    cut = lines[:4] + [lines[4][:20]]                 # a line cut in the middle
    assert ":5: not JSON" in _bad(tmp_path, cut)


def test_corrupt_lines_name_file_line_and_field(tmp_path):
    lines = good_lines()
    assert "bad.jsonl:3: field 'seq': expected seq 1" in _bad(tmp_path, lines[:2] + lines[3:])
    ev = orjson.loads(lines[3])
    del ev["blocks"]
    assert "bad.jsonl:4: field 'blocks': missing in a 'allocate' event" in _bad(
        tmp_path, lines[:3] + [orjson.dumps(ev) + b"\n"] + lines[4:])
    ev = orjson.loads(lines[2])
    ev["kind"] = "teleport"
    assert "bad.jsonl:3: field 'kind': unknown event kind 'teleport'" in _bad(
        tmp_path, lines[:2] + [orjson.dumps(ev) + b"\n"] + lines[3:])
    assert "bad.jsonl:1: empty" in _bad(tmp_path, [])    # empty: neither events nor a trace
    assert "data after the 'end' line" in _bad(tmp_path, lines + [lines[1]])
    ev = orjson.loads(lines[4])
    ev["blocks"] = [1, 99]                            # no such block
    assert "bad.jsonl:5: field 'blocks': bad 'cache' event" in _bad(
        tmp_path, lines[:4] + [orjson.dumps(ev) + b"\n"] + lines[5:])


def test_bad_header(tmp_path):
    hdr = orjson.loads(good_lines()[0])
    hdr["schema_version"] = 7
    assert "bad.jsonl:1: field 'schema_version': unsupported" in _bad(
        tmp_path, [orjson.dumps(hdr) + b"\n"] + good_lines()[1:])


def test_interrupted_stream_is_accepted(tmp_path):
    lines = good_lines()[:-1]
    lines.append(orjson.dumps({"seq": len(lines) - 1, "step": 1, "t_ms": 10.0,
                               "kind": "interrupted", "req": None, "group": None}) + b"\n")
    p = tmp_path / "int.jsonl"
    p.write_bytes(b"".join(lines))
    r = stats_json(str(p))
    assert r["source"]["interrupted"] is True and r["source"]["complete"] is False


def test_plot_writes_pngs(small_trace, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "charts"
    res = runner.invoke(app, ["stats", small_trace, *FLAGS, "--plot", str(out), "--json"])
    assert res.exit_code == 0, res.output
    names = sorted(p.name for p in out.iterdir())
    assert names == ["evictions.png", "hit_rate.png", "idle.png", "latency.png", "lifetime.png",
                     "reuse_gap.png", "usage.png"]
    assert all((out / n).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for n in names)
    json.loads(res.stdout)            # stdout still carries only the JSON document


def test_miss_classes_on_a_real_replay(tmp_path):
    # cache mode, block size 4: A computes 8 tokens; B repeats them (the last-token rule leaves
    # 4 hit, 4 missed); C repeats them under a cache salt (other hashes; the replay's
    # content_hashes show the plain ones cached: domain); D shares A's first block then 5 new
    # tokens (4 cold: block 1 starts with 50, A's with 5; 1 partial tail)
    reqs = [{"prompt_token_ids": list(range(1, 9)), "output_length": 1},
            {"prompt_token_ids": list(range(1, 9)), "output_length": 1},
            {"prompt_token_ids": list(range(1, 9)), "output_length": 1, "cache_salt": "x"},
            {"prompt_token_ids": [1, 2, 3, 4, 50, 51, 52, 53, 54], "output_length": 1}]
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in reqs))
    events = tmp_path / "ev.jsonl"
    summary = replay_json(str(trace), events, "--mode", "cache", "--block-size", "4")
    assert summary["hit_tokens"] == 4 + 4
    r = stats_json(str(events))
    assert r["misses"]["tokens"] == {"cold": 8 + 4, "evicted": 0, "partial_block": 1,
                                     "last_token": 4, "window": 0, "domain": 8, "in_flight": 0, "unknown": 0, "mamba_state": 0}
    assert r["misses"]["requests"]["last_token"] == 1


def test_domain_misses_on_a_real_replay(tmp_path):
    # cache mode, block size 4, the same 8 tokens five times: A plain (cold x2); B under LoRA
    # "sql", C under salt "x", D under salt "y": never cached in their own domains, but the
    # content was (content_hashes) -> domain x2 each; E under "sql" again: hit 4, and its last
    # block is cached in its domain -> last_token.
    toks = list(range(1, 9))
    reqs = [{"prompt_token_ids": toks, "output_length": 1},
            {"prompt_token_ids": toks, "output_length": 1, "lora": "sql"},
            {"prompt_token_ids": toks, "output_length": 1, "cache_salt": "x"},
            {"prompt_token_ids": toks, "output_length": 1, "cache_salt": "y"},
            {"prompt_token_ids": toks, "output_length": 1, "lora": "sql"}]
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in reqs))
    events = tmp_path / "ev.jsonl"
    summary = replay_json(str(trace), events, "--mode", "cache", "--block-size", "4")
    assert summary["hit_tokens"] == 4
    admits = [e for e in map(json.loads, events.read_text().splitlines())
              if e.get("kind") == "admit"]
    plain = admits[0]["prompt_hashes"]
    assert "content_hashes" not in admits[0]
    assert all(a["content_hashes"] == plain and a["prompt_hashes"] != plain for a in admits[1:])
    assert [a["hash_domain"] for a in admits] == [None, "lora=sql", "salt=x", "salt=y",
                                                  "lora=sql"]
    assert all(a["first_tokens"] == [[1, 5]] for a in admits)
    m = stats_json(str(events))["misses"]
    assert m["tokens"] == {"cold": 8, "evicted": 0, "partial_block": 0, "last_token": 4,
                           "window": 0, "domain": 24, "in_flight": 0, "unknown": 0, "mamba_state": 0}
    assert m["requests"]["domain"] == 3


def test_stats_of_a_trace_with_a_model_equals_the_replay_and_its_events(tmp_path):
    """`kvcli stats TRACE --model M` replays with the model's groups, as `kvcli replay` does."""
    trace = str(Path(__file__).resolve().parents[1] / "traces" / "shared-prefix.jsonl")
    flags = ["--model", "gpt-oss-20b", "--num-blocks", "600"]
    events = tmp_path / "ev.jsonl"
    summary = replay_json(trace, events, *flags)
    from_events = stats_json(str(events))
    from_trace = stats_json(trace, *flags)
    assert from_trace == from_events
    assert len(orjson.loads(events.read_bytes().split(b"\n", 1)[0])["groups"]) == 2
    assert from_trace["reuse"]["hit_tokens"] == summary["hit_tokens"] > 0
    assert from_trace["eviction"]["evictions"] == summary["evictions"] > 0
    assert from_trace["source"]["summary_mismatches"] == {}


def test_in_flight_miss_reason_on_the_followup_gap_case():
    """docs/stats.md's worked example: under async h2's third block was being computed by h1
    (the token completing it in flight) and counts `in_flight`; under sync h2 hits it."""
    import json as _json

    trace = str(Path(__file__).parent / "data" / "sched_cases_async" /
                "h_followup_gap.trace.jsonl")
    got = {}
    for flag in ("--async-scheduling", "--no-async-scheduling"):
        res = runner.invoke(app, ["stats", trace, "--arrivals", "step", flag, "--json"])
        assert res.exit_code == 0, res.output
        d = _json.loads(res.stdout)
        got[flag] = ({k: v for k, v in d["misses"]["tokens"].items() if v},
                     {k: v for k, v in d["misses"]["requests"].items() if v},
                     d["reuse"]["hit_tokens"])
    assert got["--async-scheduling"] == ({"cold": 32, "partial_block": 32, "in_flight": 16},
                                         {"cold": 2, "partial_block": 4, "in_flight": 1}, 48)
    assert got["--no-async-scheduling"] == ({"cold": 32, "partial_block": 32},
                                            {"cold": 2, "partial_block": 4}, 64)


def test_stats_of_a_replay_with_prefix_caching_off(tmp_path):
    # found by a random pass over the options: `kvcli stats TRACE --no-enable-prefix-caching`
    # crashed (ValueError: prompt_hashes[0] has 0 hashes, the prompt has 72 full blocks), and
    # `kvcli stats` of such a replay's events refused the stream as a bad 'admit' event
    trace = str(Path(__file__).resolve().parents[1] / "traces" / "shared-prefix.jsonl")
    args = [trace, "--num-blocks", "400", "--no-enable-prefix-caching"]
    r = CliRunner().invoke(app, ["stats", *args, "--json"])
    assert r.exit_code == 0, r.output
    misses = json.loads(r.stdout)["misses"]
    # 128 prompts of 1,152 tokens (72 blocks of 16), nothing hit: every block unattributed
    assert misses["tokens"]["unknown"] == 128 * 1152 == misses["missed_tokens"]
    assert misses["blocks"]["unknown"] == 128 * 72 and misses["requests"]["unknown"] == 128
    events = tmp_path / "ev.jsonl"
    r = CliRunner().invoke(app, ["replay", *args, "--events", str(events)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["stats", str(events), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["misses"] == misses
