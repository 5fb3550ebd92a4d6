"""`kvcli config` applies vLLM's start-up scheduler defaults and refusals as `kvcli replay` does
(`kvcore.engine.sched_limits`): the same settings give the same max_num_seqs and
max_num_batched_tokens in config's JSON and in the replay's echoed config. Before, config had
no chunked-prefill switch and no max_num_seqs, and always said the given budget or 2048: with
chunked prefill off vLLM raises an unset budget to max_model_len, and with a short max_model_len
it lowers it to max_num_seqs x max_model_len."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvcli.app import app

runner = CliRunner()
MODEL = ["gpt-oss-20b", "--num-blocks", "20000"]    # sliding windows: sized on the budget


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("limits") / "t.jsonl"
    path.write_text("".join(json.dumps({"prompt_token_ids": [i, 2, 3, 4], "output_length": 2})
                            + "\n" for i in range(3)))
    return str(path)


# (settings, max_num_seqs, max_num_batched_tokens) as vLLM 0.33's EngineArgs start with them
CASES = [
    ([], 128, 2048),
    (["--no-enable-chunked-prefill"], 128, 131072),      # at least max_model_len (gpt-oss's)
    (["--max-model-len", "8"], 128, 1024),                # at most 128 x 8
    (["--max-model-len", "8", "--max-num-seqs", "4"], 4, 32),
    (["--max-model-len", "4096", "--max-num-seqs", "4", "--no-enable-chunked-prefill"], 4, 4096),
    (["--max-num-batched-tokens", "64"], 64, 64),         # max_num_seqs follows it down
    (["--max-num-batched-tokens", "64", "--max-num-seqs", "32"], 32, 64),
]


def _json(*args) -> dict:
    r = runner.invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@pytest.mark.parametrize("settings, seqs, budget", CASES)
def test_config_and_replay_agree(trace, settings, seqs, budget):
    cfg = _json("config", *MODEL, *settings)
    rep = _json("replay", trace, "--model", *MODEL, *settings)["config"]
    assert (cfg["max_num_seqs"], cfg["max_num_batched_tokens"]) == (seqs, budget)
    assert (rep["max_num_seqs"], rep["max_num_batched_tokens"]) == (seqs, budget)
    assert cfg["enable_chunked_prefill"] == rep["enable_chunked_prefill"]
    assert cfg["max_model_len"] == rep["max_model_len"]


def test_the_budget_sizes_the_windows(trace):
    """vLLM sizes the pool after its defaults: with chunked prefill off, the sliding-window
    group holds the window plus the raised budget's in-flight tokens (2 batches)."""
    on = _json("config", *MODEL)["groups"]
    off = _json("config", *MODEL, "--no-enable-chunked-prefill")["groups"]
    assert [g["kind"] for g in on] == ["sliding_window", "full"]
    assert [g["blocks_per_request"] for g in on] == [(128 + 2 * 2048) // 16 + 1, 131072 // 16]
    assert [g["blocks_per_request"] for g in off] == [131072 // 16 + 1, 131072 // 16]


@pytest.mark.parametrize("settings, line", [
    (["--max-model-len", "4096", "--max-num-batched-tokens", "1024",
      "--no-enable-chunked-prefill"],
     ("option --max-num-batched-tokens: 1024 is below max_model_len 4096 with chunked prefill "
     "off: vLLM refuses this at start-up (a prompt must fit one step)")),
    (["--max-num-batched-tokens", "64", "--max-num-seqs", "128"],
     ("option --max-num-batched-tokens: 64 is below max_num_seqs 128: vLLM refuses this at "
     "start-up (left unset, max_num_seqs follows the budget down)")),
    (["--max-num-seqs", "0"], "option --max-num-seqs: must be a positive integer, got 0"),
    # (config checked it in the sizing layer's words: 'must be positive, got -5')
    (["--max-num-batched-tokens", "-5"],
     "option --max-num-batched-tokens: must be a positive integer, got -5"),
])
def test_config_refuses_what_replay_refuses(trace, settings, line):
    for args in (["config", *MODEL, *settings], ["replay", trace, "--model", *MODEL, *settings]):
        r = runner.invoke(app, [*args, "--json"])
        assert r.exit_code == 2, (args, r.output)
        assert r.stderr.strip() == f"error: {line}", args
