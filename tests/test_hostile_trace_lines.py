"""Trace lines a hostile hunt found to break a command (after test_hostile_inputs.py and
test_hostile_limits.py): each is one line `error: FILE:LINE: field 'x': ...`, exit code 2, in
every command that reads a trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_hostile_options import refused, runner

from kvcli.app import app

REQ = {"prompt_token_ids": [1, 2, 3, 4, 5], "output_length": 3}


def _trace(tmp_path: Path, *lines: dict) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


# -- an arrival_step past 2^63 raised OverflowError (a traceback) in the trace survey's int64
# -- array; one of 2^63 - 1 in `kvcli stats`' step columns; now bounded at 2^53 where it enters

@pytest.mark.parametrize("step, shown", [(10**20, "100,000,000,000,000,000,000"),
                                         (2**63 - 1, "9,223,372,036,854,775,807"),
                                         (2**53 + 1, "9,007,199,254,740,993")])
@pytest.mark.parametrize("command", ["replay", "stats", "curve", "cluster"])
def test_arrival_step_is_bounded(tmp_path, command, step, shown):
    path = _trace(tmp_path, REQ, dict(REQ, arrival_step=step))
    refused([command, str(path)], f"error: {path}:2: field 'arrival_step': is {shown}, past "
            "the limit of 2^53 = 9,007,199,254,740,992 steps")


def test_arrival_step_at_the_bound_replays(tmp_path):
    path = _trace(tmp_path, REQ, dict(REQ, arrival_step=2**53))
    for command in ("stats", "replay"):
        res = runner.invoke(app, [command, str(path), "--arrivals", "step", "--json"])
        assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["steps"] >= 2**53        # replay's


# -- an id of 2^64 or more: the JSON reader takes it as a float, and the message showed
# -- 'got 1.8446744073709552e+19', not what the line holds; 2^64 - 1 replays

@pytest.mark.parametrize("field", ["prompt_token_ids", "hash_ids"])
@pytest.mark.parametrize("command", ["replay", "curve"])
def test_an_id_past_2_64_says_so(tmp_path, command, field):
    req = (dict(REQ, prompt_token_ids=[1, 2**64]) if field == "prompt_token_ids" else
           {"input_length": 600, "output_length": 2, "hash_ids": [1, 2**64]})
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(req) + "\n")
    refused([command, str(path)], f"error: {path}:1: field '{field}': must hold integers below "
            "2^64, got 1.84467e+19 (an integer this large reads as a float)")
    path.write_text(json.dumps(dict(req, **{field: [1, 2**64 - 1]})) + "\n")
    assert runner.invoke(app, [command, str(path)]).exit_code == 0


@pytest.mark.parametrize("big", [2**63, 2**64 - 1])
def test_curve_of_hash_ids_past_2_63_equals_small_ids(tmp_path, big):
    # the fast path's int64 array raised OverflowError (a traceback, exit 1) for ids >= 2^63
    def points(top: int) -> list:
        path = tmp_path / f"t{top}.jsonl"
        path.write_text("".join(json.dumps({"timestamp": t, "input_length": 600,
                                            "output_length": 2, "hash_ids": [1, top]}) + "\n"
                                for t in range(3)))
        res = runner.invoke(app, ["curve", str(path), "--capacities", "1,2", "--json"])
        assert res.exit_code == 0, res.output
        return [(p["capacity_blocks"], p["hit_rate"]) for p in json.loads(res.stdout)["points"]]
    # 3 prompts of 600 tokens at 512-token blocks: with room for 2 blocks (a running request
    # holds both) the 2nd and 3rd hit their first block; with 1, none can run
    assert points(big) == points(2) == [(1, 0.0), (2, 2 * 512 / 1800)]


# -- an event stream given as a trace: its header holds a `config`, so it read as a config line
# -- and the error came at line 2 as "unknown trace format"; a config line's other keys were
# -- dropped without a word

@pytest.mark.parametrize("command", ["replay", "curve", "cluster"])
def test_an_event_stream_is_not_a_trace(tmp_path, command):
    path = _trace(tmp_path, dict(REQ, prompt_token_ids=list(range(1, 41))))  # 2 blocks stored
    for fmt, says in (("jsonl", ("this is kvcli's event stream (replay --events), not a trace: "
                                "kvcli stats reads it")),
                      ("vllm", "this is vLLM's KV event format (events-format vllm), not a trace")):
        events = tmp_path / f"{fmt}.events"
        res = runner.invoke(app, ["replay", str(path), "--events", str(events),
                                  "--events-format", fmt, "--arrivals", "step"])
        assert res.exit_code == 0, res.output
        refused([command, str(events)], f"error: {events}:1: {says}")


def test_a_config_line_holds_only_config(tmp_path):
    path = _trace(tmp_path, {"config": {"num_blocks": 500}, "extra": 1}, REQ)
    refused(["replay", str(path)], f"error: {path}:1: a config line holds only 'config'; "
            "unknown key(s) 'extra' (the options go inside it)")


# -- a request a windowed pool can never admit: "can never be admitted (stalled for 1000
# -- steps)" named no option, and --skip-bad (which promises to skip such requests) did nothing.
# -- Now what the attention layers hold at once is checked in advance (a lower bound), and a head
# -- an empty pool refuses is refused at once (tests/test_stall.py has the rules).

def _hybrid(tmp_path: Path, num_blocks: int, b: list[int]) -> Path:
    """A full-attention group beside a 32-token window; 'a' fits, 'b' is the one to refuse."""
    groups = [{"type": "full"}, {"type": "sliding_window", "sliding_window": 32}]
    return _trace(tmp_path, {"config": {"groups": groups, "num_blocks": num_blocks}},
                  dict(REQ, id="a", prompt_token_ids=list(range(1, 50))),
                  dict(REQ, id="b", prompt_token_ids=b))


def test_a_hybrid_pool_refuses_in_advance_what_its_full_layers_cannot_hold(tmp_path):
    path = _hybrid(tmp_path, 10, list(range(1, 400)))
    # 401 tokens at its last: 26 full-attention blocks and the 3 its window reads
    refused(["replay", str(path)], f"error: {path}:3: field 'num_blocks': request 'b' can never "
            "run: needs 29 blocks of 16 tokens at its last token (its attention layers alone) but "
            "only 9 are usable (num_blocks 10) (--skip-bad skips such requests)")
    res = runner.invoke(app, ["replay", str(path), "--skip-bad", "--json"])
    assert res.exit_code == 0, res.output
    assert "needs 29 blocks of 16 tokens at its last token (its attention layers alone)" \
        in res.stderr
    doc = json.loads(res.stdout)
    assert (doc["requests"], doc["finished"], doc["rejected"]) == (2, 1, 1)


def test_a_head_the_empty_windowed_pool_refuses_stops_at_once(tmp_path):
    """'b' holds 10 blocks at its last token (7 full, 3 in its window) but its one prefill
    chunk of 100 tokens needs 7 + 7: an empty pool of 11 refuses it."""
    path = _hybrid(tmp_path, 12, list(range(200, 300)))
    refused(["replay", str(path)], f"error: {path}:3: field 'num_blocks': request 'b' can never "
            "be admitted: refused with nothing running and all 11 usable blocks free (num_blocks "
            "12): vLLM would wait forever; give more num_blocks (--skip-bad skips such requests)")


# -- a line of another format was read by the first request's rules (its hash_ids dropped: a
# -- hit rate of 0 without a word); mixed UTC offsets in an Azure CSV were a TypeError traceback

@pytest.mark.parametrize("first, later, field, fmt", [
    ({"input_length": 600, "output_length": 5}, {"hash_ids": [1, 2]}, "hash_ids", "lengths"),
    ({"input_length": 600, "output_length": 5, "hash_ids": [1, 2]}, {"chat_id": 7}, "chat_id",
     "mooncake"),
    ({"input_length": 600, "output_length": 5}, {"prompt_token_ids": [1, 2]},
     "prompt_token_ids", "lengths"),
])
@pytest.mark.parametrize("command", ["replay", "curve", "stats"])
def test_a_line_of_another_format_is_named(tmp_path, command, first, later, field, fmt):
    path = _trace(tmp_path, first, {**first, **later})
    refused([command, str(path), "--mode", "cache"] if command != "curve" else
            [command, str(path)], f"error: {path}:2: field '{field}': a field of the ",
            f"made it a {fmt} trace")


def test_azure_rows_with_and_without_a_utc_offset(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:04,4808,10\n"
                    "2023-11-16 18:17:05+05:00,4808,10\n")
    refused(["replay", str(path), "--mode", "cache"], f"error: {path}:3: field 'TIMESTAMP': ",
            "has a UTC offset and the first row's has none")
    # seven fractional digits and an offset: the offset is kept (it was cut with the digits)
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    "2023-11-16 18:17:04.1234567+05:00,4808,10\n"
                    "2023-11-16 18:17:05.1234567+04:00,4808,10\n")
    reqs = tmp_path / "r.jsonl"
    r = runner.invoke(app, ["replay", str(path), "--mode", "cache", "--requests", str(reqs)])
    assert r.exit_code == 0, r.output
    # 13:17:04.123456 and 14:17:05.123456 UTC: 3,601 s apart (1 s with the offsets dropped)
    assert [json.loads(x)["arrival"] for x in reqs.read_text().splitlines()] == [0.0, 3601000.0]


def test_curve_refuses_a_timestamp_past_the_bound_as_the_full_reader_does(tmp_path):
    path = _trace(tmp_path, {"timestamp": 0, "input_length": 600, "output_length": 5,
                             "hash_ids": [1, 2]},
                  {"timestamp": 1e14, "input_length": 600, "output_length": 5,
                   "hash_ids": [1, 2]})
    refused(["curve", str(path)], f"error: {path}:2: field 'timestamp': is 1e+14 ms")


def test_a_too_long_prompt_names_the_formats_field_and_azure_counts_are_plain_digits(tmp_path):
    """A token-id trace's too-long prompt named 'input_length', a field it has none of; an
    Azure count of '4_808' read as 4808 (Python's int takes underscores)."""
    path = _trace(tmp_path, {"prompt_token_ids": list(range(1, 11)), "output_length": 5})
    refused(["replay", str(path), "--mode", "cache", "--block-size", "4", "--max-model-len",
             "10"], f"error: {path}:1: field 'prompt_token_ids': request '1' can never run")
    csv = tmp_path / "a.csv"
    csv.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:04,4_808,10\n")
    refused(["replay", str(csv), "--mode", "cache"],
            f"error: {csv}:2: field 'ContextTokens': must be an integer, got '4_808'")


# -- an id of another type was taken as its Python text: true became "True", [1] "[1]"

@pytest.mark.parametrize("rid, shown", [(True, "true"), ([1], "[1]"), ({"a": 1}, '{"a": 1}'),
                                        (1.5, "1.5")])
@pytest.mark.parametrize("line", [REQ, {"hash_ids": [1], "input_length": 3,
                                        "output_length": 2, "timestamp": 0},
                                  {"input_length": 3, "output_length": 2}])
def test_a_request_id_is_a_string_or_an_integer(tmp_path, rid, shown, line):
    path = _trace(tmp_path, dict(line, id=rid))
    refused(["replay", str(path)], f"error: {path}:1: field 'id': must be a string or an "
            f"integer, got {shown}")
    path = _trace(tmp_path, dict(line, id=7), dict(line, id="b"))
    assert runner.invoke(app, ["replay", str(path)]).exit_code == 0


@pytest.mark.parametrize("rid, shown", [(True, "true"), ([1], "[1]")])
def test_a_bailian_chat_id_is_a_string_or_an_integer(tmp_path, rid, shown):
    path = _trace(tmp_path, {"chat_id": rid, "timestamp": 0, "input_length": 20,
                             "output_length": 5, "hash_ids": [1, 2]})
    refused(["replay", str(path)], f"error: {path}:1: field 'chat_id': must be a string or an "
            f"integer, got {shown}")


# -- an Azure row with a column past csv's field size limit (128 KiB) was a _csv.Error traceback

@pytest.mark.parametrize("command", ["replay", "curve"])
def test_an_azure_column_past_the_csv_field_limit_is_refused(tmp_path, command):
    path = tmp_path / "t.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,10,2\n"
                    f"2023-11-16 18:15:47,{'1' * 200_000},2\n")
    refused([command, str(path)], f"error: {path}:3: malformed CSV row: field larger than "
            "field limit (131072)")
