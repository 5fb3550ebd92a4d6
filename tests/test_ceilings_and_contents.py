"""Where `kvcli curve` and `kvcli cluster` count what the engine counts: a trace whose lines give
different block sizes (the same tokens, as `kvcli replay` reads them, hit), a lengths-only trace
(blocks of 16, and said to hold no content), and a conversation whose next prompt repeats the
last one's output tokens (the engine caches them, so the ceilings must count them: the capacity
loss was -22.64%)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kvcli.app import app
from kvcore.cluster.run import ClusterOptions, run_cluster
from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay

runner = CliRunner()


def _json(*args) -> tuple[dict, str]:
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout), res.stderr


def test_curve_compares_tokens_across_trace_block_sizes(tmp_path):
    # id h of block size TB stands for tokens h*TB + j: both prompts are tokens 0..63
    path = tmp_path / "mix.jsonl"
    path.write_text(
        '{"timestamp":0,"input_length":64,"output_length":5,"hash_ids":[0,1,2,3],"block_size":16}\n'
        '{"timestamp":1,"input_length":64,"output_length":5,"hash_ids":[0,1],"block_size":32}\n'
        '{"timestamp":2,"input_length":40,"output_length":5,"hash_ids":[0,2],"block_size":32}\n')
    curve, _ = _json("curve", str(path), "--capacities", "8")
    cache, _ = _json("replay", str(path), "--mode", "cache")
    # the second hits 3 blocks (the last token is computed), the third 2 (tokens 0..31; its
    # tokens 32..39 are id 2's at 32: 64..71)
    assert cache["hit_tokens"] == 48 + 32
    assert curve["points"][0]["hit_tokens"] == 80 and curve["ceiling"] == 80 / 168


def test_curve_of_a_lengths_trace_says_it_holds_no_content(tmp_path):
    path = tmp_path / "az.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    "2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n")
    doc, err = _json("curve", str(path))
    assert doc["block_size"] == 16 and doc["ceiling"] == 0.0 and doc["distinct_blocks"] == 47
    assert "azure trace: prompt lengths only, so every prompt is unique" in err


def _conversations(path, n=4):
    """Turn two repeats turn one's prompt and its 64 output tokens, then 20 new tokens."""
    lines = []
    for c in range(n):
        b = c * 100_000
        p, o, q = (list(range(b + k, b + k + m)) for k, m in ((0, 64), (5000, 64), (9000, 20)))
        lines += [{"id": f"c{c}a", "timestamp": c * 10, "prompt_token_ids": p,
                   "output_token_ids": o},
                  {"id": f"c{c}b", "timestamp": 5000 + c * 10, "prompt_token_ids": p + o + q,
                   "output_length": 4}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_ceilings_count_the_output_blocks_the_engine_cached(tmp_path):
    path = tmp_path / "conv.jsonl"
    _conversations(path)
    prompt = 4 * 64 + 4 * 148
    for asyn in (False, True):
        opts = ReplayOptions(block_size=16, num_blocks=256, async_scheduling=asyn)
        alone = replay(str(path), opts)
        res = run_cluster(str(path), opts, ClusterOptions(
            replicas=2, routers=(("round_robin", ()),)))["routers"][0]
        # turn two hits turn one's prompt and 63 of its outputs: 7 whole blocks (the last
        # output token is sampled, never computed, so block 8 is not cached)
        assert alone.hit_tokens == res["hit_tokens"] == 4 * 112
        assert res["trace_ceiling"] == res["routed_ceiling"] == res["hit_rate"] == 448 / prompt
        assert res["capacity_loss"] == 0.0 == res["routing_loss"]
    # cache mode runs no decode: prompt blocks only, on both sides
    opts = ReplayOptions(block_size=16, mode="cache")
    res = run_cluster(str(path), opts, ClusterOptions(
        replicas=2, routers=(("round_robin", ()),)))["routers"][0]
    assert res["hit_tokens"] == 4 * 64 and res["trace_ceiling"] == 256 / prompt
    doc, err = _json("curve", str(path))
    assert doc["ceiling"] == 256 / prompt and "engine replay also caches the outputs" in err


def test_curve_says_it_reordered_an_out_of_order_trace(tmp_path):
    # replay said so; curve took the same order without a word (both readers: the fast one
    # for plain Mooncake files, the full one for the rest)
    lines = [(5, [1, 2]), (1, [1, 3]), (3, [4]), (9, [1, 2])]
    moon = tmp_path / "m.jsonl"
    moon.write_text("".join(json.dumps({"timestamp": t, "input_length": 512 * len(ids),
                                        "output_length": 2, "hash_ids": ids}) + "\n"
                            for t, ids in lines))
    tokens = tmp_path / "t.jsonl"
    tokens.write_text("".join(json.dumps({"timestamp": t, "prompt_token_ids": ids * 20,
                                          "output_length": 2}) + "\n" for t, ids in lines))
    said = ("2 request(s) have a timestamp earlier than a line before them: taken in timestamp "
            "order (ties in file order)")
    for path in (moon, tokens):
        _, err = _json("curve", str(path))
        assert said in err, path
        assert said.replace("taken", "replayed") in replay(str(path), ReplayOptions()).warnings
    _, err = _json("curve", str(moon), "--block-size", "16")
    assert said in err
