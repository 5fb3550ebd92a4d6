"""`kvcli curve` end to end: the published figures of the conversation trace, the JSON shape,
capacities in blocks / tokens / GiB, policies side by side, the plot, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_curve_gen import CONVERSATION, make_trace
from typer.testing import CliRunner

from kvcli.app import app

runner = CliRunner()


def curve_json(*args) -> dict:
    res = runner.invoke(app, ["curve", *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def rates(doc: dict, policy: str = "lru") -> dict[int, float]:
    return {p["capacity_blocks"]: p["hit_rate"] for p in doc["points"] if p["policy"] == policy}


@pytest.mark.slow
def test_conversation_trace_reproduces_the_published_figures():
    """kvcache-simulator's convention (--rule trace, last 50% measured, 512-token blocks):
    4.5% at 6 blocks, 4.5% at 64, 4.6% at 640, 15.0% at 6,400, 38.4% at 64,000, ceiling 39.8%."""
    doc = curve_json(str(CONVERSATION), "--rule", "trace", "--warmup", "0.5", "--block-size",
                     "512", "--capacities", "6,64,640,6400,64000")
    got = {c: round(100 * r, 1) for c, r in rates(doc).items()}
    assert got == {6: 4.5, 64: 4.5, 640: 4.6, 6400: 15.0, 64000: 38.4}
    assert round(100 * doc["ceiling"], 1) == 39.8
    assert doc["counted_requests"] == 12031 - 6015 and doc["distinct_blocks"] == 182790
    assert all(p["method"] == "one-pass" for p in doc["points"])
    # Token capacities, no warm-up: the independently computed table of traces.md.
    doc = curve_json(str(CONVERSATION), "--rule", "trace", "--capacity-tokens",
                     "1e6,2e6,4e6,8e6,1e7,5e7")
    got = [round(r, 3) for r in rates(doc).values()]
    assert got == [0.054, 0.086, 0.178, 0.266, 0.291, 0.371]
    assert round(doc["ceiling"], 4) == 0.3736


@pytest.mark.slow
def test_conversation_trace_vllm_rule_matches_the_oracle():
    """`oracle cache_mode --block-size 512` (real vLLM): .37338 at inf, .05587 at 1953 usable
    blocks (--num-blocks 1954), .18495 at 7812."""
    doc = curve_json(str(CONVERSATION), "--block-size", "512", "--capacities", "1953,7812")
    assert doc["ceiling"] == pytest.approx(0.37338, abs=5e-6)
    got = rates(doc)
    assert got[1953] == pytest.approx(0.05587, abs=5e-6)
    assert got[7812] == pytest.approx(0.18495, abs=5e-6)
    assert doc["one_pass_exact"] == {"min": 247, "max": None}


def test_json_shape_policies_and_knees(tmp_path):
    trace = str(make_trace(tmp_path / "g.jsonl", seed=8, aligned_repeats=False))
    doc = curve_json(trace, "--policies", "lru,fifo,eager", "--block-size", "16",
                     "--capacities", "5,120,400", "--jobs", "2")
    assert set(doc) >= {"ceiling", "points", "knees", "knee_method", "rule", "block_size"}
    assert [(p["policy"], p["capacity_blocks"]) for p in doc["points"]] == \
        [(pol, c) for pol in ("lru", "fifo", "eager") for c in (5, 120, 400)]
    assert set(doc["points"][0]) == {"policy", "capacity_blocks", "capacity_tokens",
                                     "capacity_gib", "hit_rate", "hit_tokens", "prompt_tokens",
                                     "rejected", "rejected_tokens", "method"}
    lru = {p["capacity_blocks"]: p for p in doc["points"] if p["policy"] == "lru"}
    # 5 blocks is below the largest request: vLLM rejects it, so that point is a real replay.
    assert lru[5]["method"] == "replay" and lru[5]["rejected"] > 0
    # a rejected request's prompt stays in the denominator, as missed tokens
    assert lru[5]["prompt_tokens"] == lru[120]["prompt_tokens"] and lru[5]["rejected_tokens"] > 0
    assert lru[5]["hit_rate"] == lru[5]["hit_tokens"] / lru[120]["prompt_tokens"]
    assert lru[120]["method"] == lru[400]["method"] == "one-pass"
    assert all(p["hit_rate"] == 0.0 for p in doc["points"] if p["policy"] == "eager")
    assert doc["knee_method"]["lru"] == dict.fromkeys(("50", "90", "95", "99"), "one-pass")
    assert set(doc["knee_method"]["fifo"].values()) <= {"points", None}
    assert doc["knee_method"]["eager"] == dict.fromkeys(("50", "90", "95", "99"))
    k = doc["knees"]["lru"]
    assert k["50"] <= k["90"] <= k["95"] <= k["99"] <= doc["ceiling_capacity_blocks"]
    assert doc["knees"]["eager"] == {"50": None, "90": None, "95": None, "99": None}


def test_default_sweep_reaches_the_ceiling(tmp_path):
    trace = str(make_trace(tmp_path / "g.jsonl", seed=9))
    doc = curve_json(trace, "--rule", "trace")
    caps = [p["capacity_blocks"] for p in doc["points"]]
    assert caps[0] == 1 and caps[-1] == doc["ceiling_capacity_blocks"] and len(caps) >= 15
    assert doc["points"][-1]["hit_rate"] == doc["ceiling"]


def test_table_and_plot(tmp_path):
    trace = str(make_trace(tmp_path / "g.jsonl", seed=8))
    charts = tmp_path / "charts" / "new"          # created, parents too, as stats --plot does
    res = runner.invoke(app, ["curve", trace, "--policies", "lru,lfu", "--capacities", "50,500",
                              "--plot", str(charts)])
    assert res.exit_code == 0, res.output
    assert "Hit rate by capacity" in res.stdout and "ceiling (infinite cache)" in res.stdout
    assert [p.name for p in charts.iterdir()] == ["curve.png"]
    assert (charts / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {charts / 'curve.png'}" in res.stderr


def test_capacity_gib_uses_the_models_bytes_per_block(tmp_path):
    """llama-3.1-8b: 32 layers x 8 KV heads x 128 x 2 (K,V) x 2 bytes = 128 KiB a token, so a
    16-token block is 2 MiB and 1 GiB is 512 blocks, 511 usable (vLLM's null block)."""
    trace = str(make_trace(tmp_path / "g.jsonl", seed=8))
    doc = curve_json(trace, "--capacity-gib", "1,0.5", "--model", "llama-3.1-8b")
    assert [p["capacity_blocks"] for p in doc["points"]] == [255, 511]


@pytest.mark.parametrize("model, has", [
    # a Mamba hybrid's attention block is raised to 576 tokens: 1 GiB read as 74 blocks of 16
    ("qwen3-next-80b-a3b", "3 mamba groups and 1 full group of 576-token blocks"),
    # a block id is spent in every group: the one group's capacity overstated
    ("gemma-3-27b", "6 sliding_window groups and 1 full group of 16-token blocks"),
    ("gpt-oss-20b", "1 sliding_window group and 1 full group of 16-token blocks")])
def test_capacity_gib_of_a_model_of_several_groups_is_refused(tmp_path, model, has):
    trace = str(make_trace(tmp_path / "g.jsonl", seed=8, n=20))
    res = runner.invoke(app, ["curve", trace, "--capacity-gib", "1", "--model", model])
    assert res.exit_code == 2
    assert res.stderr == ("error: option --capacity-gib: the curve replays one full-attention "
                          f"group of 16-token blocks; {model}'s KV cache has {has}, so its "
                          "GiB are not that group's blocks: replay the model (kvcli replay "
                          "--model M --gpu-memory-gib G) or give --capacities\n")
    # an MLA model is one group: its GiB convert
    assert runner.invoke(app, ["curve", trace, "--capacity-gib", "1", "--model",
                               "deepseek-v3"]).exit_code == 0


@pytest.mark.parametrize("args,needle", [
    (["--policies", "lru,arc"], "option --policies: unknown policy 'arc'"),
    (["--rule", "exact"], "option --rule:"),
    (["--capacities", "10,abc"], "option --capacities: not a whole number: 'abc'"),
    (["--capacities", "0"], "option --capacities: must be positive"),
    # read exactly (as a float, the first was 100 and the second 2^53)
    (["--capacities", "100.0000000000000001"],
     "option --capacities: not a whole number: '100.0000000000000001'"),
    (["--capacities", "9007199254740993"],
     "option --capacities: must be at most 1,000,000,000,000, got 9,007,199,254,740,993"),
    (["--capacity-gib", "4"], "option --capacity-gib: needs a model"),
    (["--capacities", "4", "--capacity-tokens", "64"], "give only one of"),
    (["--warmup", "1.5"], "option --warmup:"),
    (["--jobs", "0"], "option --jobs:"),
])
def test_bad_options_exit_2(tmp_path, args, needle):
    trace = str(make_trace(tmp_path / "g.jsonl", seed=8, n=20))
    res = runner.invoke(app, ["curve", trace, *args])
    assert res.exit_code == 2 and needle in res.output, res.output


def test_bad_trace_names_file_line_and_field(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1, 2]}\n'
                 '{"timestamp": 1, "input_length": 600, "output_length": 1, "hash_ids": [1]}\n')
    res = runner.invoke(app, ["curve", str(p), "--block-size", "16"])
    assert res.exit_code == 2
    assert f"{p}:2: field 'hash_ids'" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["curve", str(tmp_path / "missing.jsonl")])
    assert res.exit_code == 2 and "no such file" in res.output


ROOT = Path(__file__).resolve().parents[1]


def test_knees_are_monotone_and_say_how_each_was_found():
    """The issue's case: one requested capacity above the one pass's range for the low knees."""
    for caps in ("4096", "10,20"):
        doc = curve_json(str(ROOT / "traces" / "multiturn-chat.jsonl"), "--capacities", caps)
        k, how = doc["knees"]["lru"], doc["knee_method"]["lru"]
        # the 50% knee is below the exact range (from 305 blocks), which reaches it already:
        # a bound at 305 (it was 90%'s 2,944, labelled exact, whatever the capacities asked)
        assert k == {"50": 305, "90": 2944, "95": 3710, "99": 4544}, caps
        assert how == {"50": "bound", "90": "one-pass", "95": "one-pass", "99": "one-pass"}
        assert doc["one_pass_exact"]["min"] == 305


def test_capacity_gib_with_a_model_uses_the_replays_block_size(tmp_path):
    from typer.testing import CliRunner

    from kvcli.app import app

    trace = str(ROOT / "traces" / "multiturn-chat.jsonl")
    res = CliRunner().invoke(app, ["curve", trace, "--capacity-gib", "0.5,1,4",
                                   "--model", "llama-3.1-8b", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    # Llama-3.1-8B: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 128 KiB a token, so a
    # 16-token block is 2 MiB: 0.5 GiB = 256 block ids, one of them the null block.
    assert doc["block_size"] == 16
    assert [(p["capacity_gib"], p["capacity_blocks"]) for p in doc["points"]] == \
        [(0.5, 255), (1.0, 511), (4.0, 2047)]
    rates = [p["hit_rate"] for p in doc["points"]]
    assert rates == sorted(rates)           # rejected requests never raise a smaller capacity
    table = CliRunner().invoke(app, ["curve", trace, "--capacity-gib", "0.5,1,4",
                                     "--model", "llama-3.1-8b"])
    assert "GiB" in table.stdout


def test_jobs_with_nothing_to_spread_is_said(tmp_path):
    """--jobs spreads the exact points over processes; where the one pass gives every point
    (or one point is left) it did nothing, and said nothing."""
    trace = str(make_trace(tmp_path / "g.jsonl", seed=9))
    said = ("option --jobs: no effect: 0 exact point(s) to run (the one-pass LRU gives the "
            "others in this process)")
    doc = curve_json(trace, "--rule", "trace", "--jobs", "2")
    assert doc["warnings"] == [said]
    assert curve_json(trace, "--rule", "trace")["warnings"] == []
    one = curve_json(trace, "--rule", "trace", "--jobs", "2", "--policies", "fifo",
                     "--capacities", "4")
    assert one["warnings"] == [said.replace("0 exact", "1 exact")]
    two = curve_json(trace, "--rule", "trace", "--jobs", "2", "--policies", "fifo",
                     "--capacities", "4,8")
    assert two["warnings"] == []


def test_a_smaller_point_that_reaches_a_fraction_beats_the_exact_knee(tmp_path):
    """Below the exact range a 20-block prompt is rejected and no longer pushes the shared
    4-block prefix out: 10 blocks reach the ceiling, 20 do not. The knees said 22 and 24,
    exact (one-pass), with the 10-block point at 100% in the table."""
    path = tmp_path / "t.jsonl"
    nxt = iter(range(1000, 10**6))
    with path.open("w") as f:
        for i in range(20):
            f.write(json.dumps({"timestamp": 2000.0 * i, "input_length": 72, "output_length": 1,
                                "block_size": 16, "hash_ids": [1, 2, 3, 4, next(nxt)]}) + "\n")
            f.write(json.dumps({"timestamp": 2000.0 * i + 1000, "input_length": 320,
                                "output_length": 1, "block_size": 16,
                                "hash_ids": [next(nxt) for _ in range(20)]}) + "\n")
    doc = curve_json(str(path), "--capacities", "10,20,21,22,24,26,30")
    assert rates(doc)[10] > rates(doc)[20]
    assert doc["knees"]["lru"] == {"50": 10, "90": 10, "95": 10, "99": 10}
    assert set(doc["knee_method"]["lru"].values()) == {"points"}
