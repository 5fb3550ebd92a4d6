"""`kvcli replay TRACE --explain ID` says why the request's prompt missed: stats' miss reasons
(docs/stats.md) for its counted admission, and which requests evicted the blocks it missed."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from kvcli.app import app
from kvcore.analysis.stats import StatsCollector, stats_from_events
from kvcore.engine.events import CallbackEvents
from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay

ROOT = Path(__file__).resolve().parents[1]
CHAT = ROOT / "traces" / "multiturn-chat.jsonl"
GAP = ROOT / "tests" / "data" / "sched_cases_async" / "h_followup_gap.trace.jsonl"
runner = CliRunner()


def explain(*args: str) -> dict:
    r = runner.invoke(app, ["replay", *map(str, args), "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_a_request_missed_by_eviction_names_the_evictors():
    doc = explain(CHAT, "--num-blocks", "600", "--explain", "40")
    assert doc["misses"] == [{
        "step": 1548, "prompt_tokens": 1820, "hit_tokens": 1024, "missed_tokens": 796,
        "missed": {"evicted": 464, "cold": 320, "partial_block": 12},
        "evicted_by": {"30": 29}}]                  # 29 blocks of 16: the 464 evicted tokens
    r = runner.invoke(app, ["replay", str(CHAT), "--num-blocks", "600", "--explain", "40"])
    lines = r.stdout.splitlines()
    assert lines[-2:] == [
        ("missed at step 1,548: 796 of 1,820 prompt tokens (evicted 464, cold 320, "
         "partial_block 12)"),
        "  its missed blocks were evicted by: 30 (29)"]


def test_a_block_in_flight_is_moved_from_cold():
    # docs/stats.md's worked example: under async h1 was computing h2's third block
    doc = explain(GAP, "--arrivals", "step", "--explain", "h2")
    assert doc["misses"] == [{"step": 18, "prompt_tokens": 53, "hit_tokens": 32,
                              "missed_tokens": 21, "missed": {"in_flight": 16,
                                                              "partial_block": 5},
                              "evicted_by": {}}]
    doc = explain(GAP, "--arrivals", "step", "--no-async-scheduling", "--explain", "h2")
    assert doc["misses"][0]["missed"] == {"partial_block": 5}        # sync: h2 hit it


def test_every_requests_reasons_add_up_to_the_stats_totals(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(CHAT.read_text().splitlines()[:80]) + "\n")
    events: list[dict] = []
    replay(str(path), ReplayOptions(num_blocks=300), CallbackEvents(events.append))
    totals = stats_from_events(events)["misses"]["tokens"]
    summed: Counter = Counter()
    admissions = 0
    for rid in {ev["req"] for ev in events if ev.get("kind") == "arrive"}:
        c = StatsCollector(events[0], watch=rid)
        for ev in events[1:]:
            c.feed(ev)
        assert c.miss.watch is not None
        for adm in c.miss.watch.to_json(c.reqs.name):
            summed.update(adm["missed"])
            admissions += 1
    assert admissions == 80
    assert {k: v for k, v in totals.items() if v} == dict(summed) and summed["evicted"] > 0
