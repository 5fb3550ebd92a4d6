"""Latency per request (docs/replay-engine.md, "Latency"): TTFT, TPOT, E2E and queueing time worked out
by hand from the clock's formula, the percentile method, the JSON keys, the "uncalibrated" label,
who is counted, `--arrivals step`, `kvcli stats` against the replay, and the CDF chart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine.cost import CostModel
from kvcore.engine.latency import distribution, percentile

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "traces" / "multiturn-chat.jsonl"
runner = CliRunner()
KEYS = ["ttft_ms", "tpot_ms", "e2e_ms", "queue_ms"]
DIST = ["count", "mean", "p50", "p90", "p99", "max"]

# a: 100 prompt tokens at 0 ms, 3 outputs; b: 40 at 2 ms, 1 output; c: 3,000 at 100 ms, 2 outputs
ABC = [{"timestamp": 0, "input_length": 100, "output_length": 3},
       {"timestamp": 2, "input_length": 40, "output_length": 1},
       {"timestamp": 100, "input_length": 3000, "output_length": 2}]


def write(tmp_path, rows, name="t.jsonl") -> str:
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(p)


def replay(trace, tmp_path, *flags):
    """The summary, the request lines and the `finish` events of a replay."""
    rq, ev = tmp_path / "rq.jsonl", tmp_path / "ev.jsonl"
    res = runner.invoke(app, ["replay", str(trace), "--json", "--requests", str(rq),
                              "--events", str(ev), *map(str, flags)])
    assert res.exit_code == 0, res.output
    lines = [json.loads(x) for x in rq.read_text().splitlines()]
    events = [json.loads(x) for x in ev.read_text().splitlines()]
    return json.loads(res.stdout), lines, events


def lat(line: dict) -> tuple:
    return tuple(line[k] for k in KEYS)


def test_a_hand_worked_trace_under_sync_scheduling(tmp_path):
    """step_ms = 5 + 0.05 x prefill tokens + 0.25 x decoding requests, block size 16, budget 2,048:
    step 0 [0, 10]: a prefills 100 (5 + 5): a's first token at 10; b (2 ms) is taken in at 10.
    step 1 [10, 17.25]: a decodes, b prefills 40 (5 + 2 + 0.25): b's only token, b done; a's 2nd.
    step 2 [17.25, 22.5]: a decodes (5.25): a's 3rd, a done.  step 3 [22.5, 27.5]: the flush step.
    idle until c arrives at 100; step 4 [100, 207.4]: c prefills 2,048 (5 + 102.4); step 5
    [207.4, 260]: the other 952 (5 + 47.6): c's first token; step 6 [260, 265.25]: c decodes, done.
    a: TTFT 10, TPOT (22.5 - 10) / 2 = 6.25, E2E 22.5, queue 0.  b: TTFT 17.25 - 2 = 15.25, no
    TPOT (one token), E2E 15.25, queue 10 - 2 = 8.  c: TTFT 160, TPOT 5.25, E2E 165.25, queue 0."""
    s, lines, events = replay(write(tmp_path, ABC), tmp_path, "--block-size", 16,
                              "--no-async-scheduling")
    assert [lat(x) for x in lines] == [(10.0, 6.25, 22.5, 0.0), (15.25, None, 15.25, 8.0),
                                       (160.0, 5.25, 165.25, 0.0)]
    # a line's TTFT is its first token minus the trace's arrival, not the line's `arrival`
    assert [(x["arrival"], x["first_token_ms"], x["finish_ms"]) for x in lines] == \
        [(0.0, 10.0, 22.5), (10.0, 17.25, 17.25), (100.0, 260.0, 265.25)]
    assert s["latency"] == {
        "uncalibrated": True,
        # sorted 10, 15.25, 160: p50 at index floor(1.5) = 1, p90 floor(2.7) = 2, p99 2
        "ttft_ms": {"count": 3, "mean": 61.75, "p50": 15.25, "p90": 160.0, "p99": 160.0,
                    "max": 160.0},
        # 5.25, 6.25: p50 at index floor(1.0) = 1 (nearest rank would say 5.25)
        "tpot_ms": {"count": 2, "mean": 5.75, "p50": 6.25, "p90": 6.25, "p99": 6.25, "max": 6.25},
        "e2e_ms": {"count": 3, "mean": 67.666667, "p50": 22.5, "p90": 165.25, "p99": 165.25,
                   "max": 165.25},
        "queue_ms": {"count": 3, "mean": 2.666667, "p50": 0.0, "p90": 8.0, "p99": 8.0,
                     "max": 8.0}}
    # the queueing delay the summary had before: the same delays, in seconds
    assert (s["queue_delay_p50_s"], s["queue_delay_p99_s"]) == (0.0, 0.008)
    # each finish event carries its request's latencies, as its line
    fin = {e["req"]: e for e in events if e.get("kind") == "finish"}
    assert {r: lat(e) for r, e in fin.items()} == {x["id"]: lat(x) for x in lines}


def test_under_async_scheduling_a_token_comes_when_its_own_batch_ends_on_the_gpu(tmp_path):
    """Async (the default): the GPU runs the queued batches back to back; a step that processes
    a batch ends when that batch ends (the engine blocks on it), a step that returns early takes
    no time. Step 0 at 0 schedules a 100 (batch 0 on the GPU [0, 10]) and returns early; step 1
    at 0 schedules a's decode ([10, 15.25]) and processes batch 0: ends at 10, a's first token;
    b (arrived at 2) is taken in then. Step 2 at 10: a 1 + b 40 ([15.25, 22.5]), processes batch
    1: ends at 15.25 (a's 2nd). Step 3 at 15.25: nothing left to schedule (an empty batch, [22.5,
    27.5]), processes batch 2: ends at 22.5, a done and b's only token (b done). c: step 5 at 100
    schedules 2,048 ([100, 207.4]) and returns early; step 6 schedules 952 ([207.4, 260]) and
    ends at 207.4; step 7 schedules c's decode ([260, 265.25]) and ends at 260 (c's first
    token); step 8 ends at 265.25, c done. So a and c see what sync gives them (their steps
    cost the same: the pipeline hides no work); b waits for the batch a put in the GPU's queue
    before it arrived (sync: 15.25), and so did the old one-step-late stamps: a 17.25 / 27.5."""
    s, lines, _ = replay(write(tmp_path, ABC), tmp_path, "--block-size", 16)
    assert [lat(x) for x in lines] == [(10.0, 6.25, 22.5, 0.0), (20.5, None, 20.5, 8.0),
                                       (160.0, 5.25, 165.25, 0.0)]
    assert [s["latency"]["ttft_ms"][k] for k in DIST] == [3, 63.5, 20.5, 160.0, 160.0, 160.0]
    assert [s["latency"]["tpot_ms"][k] for k in DIST] == [2, 5.75, 6.25, 6.25, 6.25, 6.25]
    assert s["sim_time_s"] == 0.26525


def test_a_preempted_request_keeps_its_first_token(tmp_path):
    """Two 16-token prompts of 40 outputs in 5 usable blocks, sync: step 0 prefills both (5 +
    1.6 = 6.6 ms: both first tokens); steps 1-16 decode both (5.5 ms each, to 94.6); in step 17
    each needs a third block: the last one (r1) is preempted; r0 decodes alone (5.25 ms a step)
    and finishes in step 39 at 99.85 + 22 x 5.25 = 215.35. r1 comes back in step 40 (16 tokens
    hit, 17 computed: 5.85 ms) and decodes to step 62: 215.35 + 5.85 + 22 x 5.25 = 336.7. Its TTFT
    stays 6.6; its TPOT is (336.7 - 6.6) / 39."""
    rows = [{"timestamp": 0, "input_length": 16, "output_length": 40}] * 2
    s, lines, _ = replay(write(tmp_path, rows), tmp_path, "--block-size", 16, "--num-blocks", 6,
                         "--no-async-scheduling")
    assert s["preemptions"] == 1 and [x["preemptions"] for x in lines] == [0, 1]
    assert [lat(x) for x in lines] == [(6.6, 5.352564, 215.35, 0.0),
                                       (6.6, 8.464103, 336.7, 0.0)]
    assert lines[1]["first_token_ms"] == 6.6


def test_warm_up_and_rejected_requests_are_not_counted(tmp_path):
    # --warmup 0.34 leaves a (the first third) out, as it leaves it out of the hit rate
    s, lines, _ = replay(write(tmp_path, ABC), tmp_path, "--block-size", 16,
                         "--no-async-scheduling", "--warmup", 0.34)
    assert s["warmup_requests"] == 1 and s["counted_requests"] == 2
    assert lines[0]["ttft_ms"] == 10.0          # its line still has its latencies
    assert [s["latency"]["ttft_ms"][k] for k in ("count", "mean", "p50", "max")] == \
        [2, 87.625, 160.0, 160.0]
    assert s["latency"]["tpot_ms"]["count"] == 1          # b's one token has no TPOT
    # c needs 188 blocks: with 100 it is skipped, and has no latency
    s, lines, _ = replay(write(tmp_path, ABC), tmp_path, "--block-size", 16,
                         "--no-async-scheduling", "--num-blocks", 100, "--skip-bad")
    assert s["rejected"] == 1 and lines[2]["rejected"] is not None
    assert lat(lines[2]) == (None, None, None, None)
    assert s["latency"]["ttft_ms"]["count"] == 2 and s["latency"]["ttft_ms"]["max"] == 15.25


def test_arrivals_ignore_count_from_time_zero_and_step_arrivals_have_no_latency(tmp_path):
    trace = write(tmp_path, ABC)
    s, lines, _ = replay(trace, tmp_path, "--block-size", 16, "--arrivals", "ignore")
    assert [x["ttft_ms"] for x in lines] == [x["first_token_ms"] for x in lines]
    assert [x["e2e_ms"] for x in lines] == [x["finish_ms"] for x in lines]
    assert s["latency"]["ttft_ms"]["count"] == 3 and s["queue_delay_p50_s"] is None
    # steps are the clock there: every latency key is null, in the lines, the events and the
    # summary (the lines' step numbers stay)
    s, lines, events = replay(trace, tmp_path, "--block-size", 16, "--arrivals", "step")
    assert s["latency"] is None
    assert all(lat(x) == (None,) * 4 and x["finish_step"] is not None for x in lines)
    assert all(lat(e) == (None,) * 4 for e in events if e.get("kind") == "finish")
    s, lines, _ = replay(trace, tmp_path, "--mode", "cache", "--block-size", 16)
    assert s["latency"] is None and all(lat(x) == (None,) * 4 for x in lines)


def test_percentiles_are_the_queue_delay_method_on_known_sets():
    assert [percentile([1, 2, 3, 4], q) for q in (0.5, 0.9, 0.99)] == [3, 4, 4]
    hundred = list(range(1, 101))
    assert [percentile(hundred, q) for q in (0.0, 0.5, 0.9, 0.99, 1.0)] == [1, 51, 91, 100, 100]
    assert distribution([3.0, 1.0, 2.0]) == {"count": 3, "mean": 2.0, "p50": 2.0, "p90": 3.0,
                                             "p99": 3.0, "max": 3.0}
    assert distribution([0.1, 0.2]) == {"count": 2, "mean": 0.15, "p50": 0.2, "p90": 0.2,
                                        "p99": 0.2, "max": 0.2}
    assert distribution([]) == {"count": 0, "mean": None, "p50": None, "p90": None, "p99": None,
                                "max": None}


def test_queue_ms_is_the_summary_queue_delay_on_the_sample(tmp_path):
    s, _, _ = replay(SAMPLE, tmp_path, "--block-size", 16, "--num-blocks", 2048)
    q = s["latency"]["queue_ms"]
    assert q["count"] == s["counted_requests"] == s["finished"] == 294
    assert (round(q["p50"] / 1000, 6), round(q["p99"] / 1000, 6)) == \
        (s["queue_delay_p50_s"], s["queue_delay_p99_s"]) == (0.005032, 0.749627)
    # (before a token was stamped with the end of its own batch on the GPU, under async: the
    # next step's end, one batch late: mean 129.323833, p50 81.86, p90 281.217)
    assert [s["latency"]["ttft_ms"][k] for k in DIST] == [294, 116.572983, 76.968, 202.631,
                                                           821.922, 932.603]


def test_json_keys_are_stable(tmp_path):
    s, lines, events = replay(write(tmp_path, ABC), tmp_path, "--block-size", 16)
    assert list(s["latency"]) == ["uncalibrated", *KEYS]
    assert all(list(s["latency"][k]) == DIST for k in KEYS)
    assert list(lines[0]) == ["id", "arrival", "arrival_step", "prompt_tokens", "output_tokens",
                              "generated_tokens", "hit_tokens", "preemptions",
                              "first_scheduled_step", "finish_step", "first_token_ms",
                              "finish_ms", "rejected", *KEYS]
    fin = next(e for e in events if e.get("kind") == "finish")
    assert list(fin) == ["seq", "step", "t_ms", "kind", "req", "group", "output_tokens", *KEYS]
    assert events[0]["uncalibrated_clock"] is True
    keys = list(s)
    assert keys[keys.index("queue_delay_p99_s") + 1] == "latency"


def test_a_request_max_model_len_stops_says_what_it_generated(tmp_path):
    # the line's output_tokens is the trace's (50); TPOT divides by the 20 it generated before
    # max_model_len (30) stopped it, and the line did not say 20
    path = tmp_path / "t.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 10, "output_length": 50}\n')
    _, lines, events = replay(path, tmp_path, "--max-model-len", 30)
    line = lines[0]
    assert (line["output_tokens"], line["generated_tokens"]) == (50, 20)
    assert line["tpot_ms"] == (line["finish_ms"] - line["first_token_ms"]) / 19 == 5.25
    assert next(e for e in events if e.get("kind") == "finish")["output_tokens"] == 20


def test_the_uncalibrated_label_comes_from_the_clock(tmp_path):
    assert CostModel().uncalibrated
    assert not CostModel(decode_ms_per_seq=0.3).uncalibrated
    trace = write(tmp_path, ABC)
    res = runner.invoke(app, ["replay", trace, "--block-size", "16"])
    assert res.exit_code == 0
    assert "Latency, ms (uncalibrated clock)" in res.stdout and "UNCALIBRATED" in res.stdout
    assert "TTFT (to first token)" in res.stdout and "165.250" in res.stdout
    s, _, events = replay(trace, tmp_path, "--block-size", 16, "--decode-ms-per-seq", 0.3)
    assert s["latency"]["uncalibrated"] is False and events[0]["uncalibrated_clock"] is False
    res = runner.invoke(app, ["replay", trace, "--block-size", "16", "--decode-ms-per-seq", "0.3"])
    assert "Latency, ms (simulated clock)" in res.stdout and "UNCALIBRATED" not in res.stdout
    # a's TPOT under async with 0.3 ms a decoding request: its tokens at the ends of its
    # batches, 10, 15.3 (a alone) and 22.6 (with b's 40-token prefill): (22.6 - 10) / 2
    assert s["latency"]["tpot_ms"]["max"] == 6.3


def _stats(*args) -> dict:
    res = runner.invoke(app, ["stats", *map(str, args), "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.mark.parametrize("flags", [[], ["--no-async-scheduling", "--warmup", "0.5"],
                                   ["--arrivals", "ignore"]])
def test_kvcli_stats_agrees_with_the_replay(tmp_path, flags):
    s, _, _ = replay(SAMPLE, tmp_path, "--block-size", 16, "--num-blocks", 2048, *flags)
    from_events = _stats(tmp_path / "ev.jsonl")
    from_trace = _stats(SAMPLE, "--block-size", 16, "--num-blocks", 2048, *flags)
    assert from_events == from_trace
    lat = dict(from_events["latency"])
    cdf = lat.pop("cdf")
    assert lat == s["latency"] and from_events["source"]["summary_mismatches"] == {}
    for k in KEYS:
        assert len(cdf[k]) == 101 and cdf[k][-1] == lat[k]["max"]
        assert cdf[k][50] == lat[k]["p50"] and cdf[k][99] == lat[k]["p99"]
    table = runner.invoke(app, ["stats", str(tmp_path / "ev.jsonl")]).stdout
    assert "Latency, ms (uncalibrated clock)" in table


def test_stats_of_step_arrivals_and_cache_mode_have_no_latency(tmp_path):
    trace = write(tmp_path, ABC)
    assert _stats(trace, "--block-size", 16, "--arrivals", "step")["latency"] is None
    assert _stats(trace, "--block-size", 16, "--mode", "cache")["latency"] is None


def test_plot_writes_the_latency_cdf(tmp_path):
    pytest.importorskip("matplotlib")
    charts = tmp_path / "charts"
    res = runner.invoke(app, ["stats", str(SAMPLE), "--block-size", "16", "--num-blocks",
                              "2048", "--plot", str(charts)])
    assert res.exit_code == 0, res.output
    png = charts / "latency.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {png}" in res.stderr
    # no latencies, no chart
    res = runner.invoke(app, ["stats", write(tmp_path, ABC), "--block-size", "16", "--arrivals",
                              "step", "--plot", str(tmp_path / "none")])
    assert res.exit_code == 0 and not (tmp_path / "none" / "latency.png").exists()
    assert (tmp_path / "none" / "usage.png").exists()
