"""`kvcore.engine.sched_limits`: vLLM 0.33's start-up scheduler defaults (EngineArgs) and the
combinations `SchedulerConfig.verify_max_model_len` refuses."""

from __future__ import annotations

import io
import json

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay
from kvcore.errors import InputError

runner = CliRunner()


def _trace(path, n=12, prompt=40, out=6, config=None):
    lines = [json.dumps({"config": config})] if config is not None else []
    lines += [json.dumps({"timestamp": 0, "request_id": f"r{i}",
                          "prompt_token_ids": list(range(i * 1000, i * 1000 + prompt)),
                          "output_length": out}) for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _run(path, **kw):
    steps = io.BytesIO()
    s = replay(path, ReplayOptions(arrivals="ignore", **kw), None, steps_out=steps)
    return s, [json.loads(x) for x in steps.getvalue().splitlines()]


def _most_running(steps) -> int:
    running: set = set()
    most = 0
    for x in steps:
        running |= set(x["admitted"])
        most = max(most, len(running))
        running -= set(x["finished"])
    return most


def test_an_unset_max_num_seqs_follows_the_budget_down(tmp_path):
    # 12 requests of 2-token prompts decoding 30 tokens: a budget of 8 alone runs 8 sequences
    # (vLLM's EngineArgs), not 128; with 128 seats set, all 12 run (8 scheduled a step)
    path = _trace(tmp_path / "t.jsonl", prompt=2, out=30)
    s, steps = _run(path, max_num_batched_tokens=8)
    assert (s.config["max_num_seqs"], s.config["max_num_batched_tokens"]) == (8, 8)
    assert _most_running(steps) == 8
    s, steps = _run(path, max_num_batched_tokens=8, max_num_seqs=4)
    assert s.config["max_num_seqs"] == 4 and _most_running(steps) == 4      # set: kept
    with pytest.raises(InputError, match="8 is below max_num_seqs 128"):   # 128 set, as typed
        _run(path, max_num_batched_tokens=8, max_num_seqs=128,
             given=frozenset({"max_num_batched_tokens", "max_num_seqs"}))


def test_an_unset_budget_follows_max_model_len(tmp_path):
    path = _trace(tmp_path / "t.jsonl")
    s, _ = _run(path, max_model_len=100, max_num_seqs=4)
    assert s.config["max_num_batched_tokens"] == 400          # min(2048, 4 x 100)
    s, _ = _run(path, max_model_len=3000, enable_chunked_prefill=False)
    assert s.config["max_num_batched_tokens"] == 3000         # a whole prompt fits a step
    s, _ = _run(path, max_model_len=3000)
    assert s.config["max_num_batched_tokens"] == 2048         # chunked: the default stands


@pytest.mark.parametrize("args,message", [
    (["--max-num-batched-tokens", "64", "--max-num-seqs", "100"],
     ("option --max-num-batched-tokens: 64 is below max_num_seqs 100: vLLM refuses this at "
      "start-up")),
    (["--max-model-len", "4000", "--no-enable-chunked-prefill", "--max-num-batched-tokens",
      "2048"], ("option --max-num-batched-tokens: 2048 is below max_model_len 4000 with "
                "chunked prefill off")),
    (["--max-model-len", "1000", "--long-prefill-token-threshold", "2000"],
     "option --long-prefill-token-threshold: 2000 is above max_model_len 1000"),
    # blamed on the option given, the message says whose value the number is (it said
    # "option --max-num-seqs: 2048 is below max_num_seqs 4096")
    (["--max-num-seqs", "4096"],
     ("option --max-num-seqs: max_num_batched_tokens 2048 is below max_num_seqs 4096: vLLM "
      "refuses this at start-up")),
    # an EAGLE-style drafter's K lookahead slots leave a budget of K no token to schedule
    # (VllmConfig._set_max_num_scheduled_tokens); K + 1 runs, and ngram has no such slots
    (["--max-num-batched-tokens", "3", "--max-num-seqs", "2", "--spec-method", "mtp",
      "--num-speculative-tokens", "3", "--spec-acceptance-rate", "0.5"],
     ("option --max-num-batched-tokens: 3 leaves no token to schedule beside mtp's 3 lookahead "
      "slots: vLLM refuses this at start-up ('VllmConfig does not have enough slots to "
      "schedule a token and support the speculative decoding settings.')")),
])
def test_what_vllm_refuses_is_refused(tmp_path, args, message):
    r = runner.invoke(app, ["replay", _trace(tmp_path / "t.jsonl"), *args])
    assert r.exit_code == 2, r.output
    assert message in r.output and "Traceback" not in r.output


def test_the_config_lines_values_are_named_at_its_line(tmp_path):
    path = _trace(tmp_path / "t.jsonl", config={"max_num_batched_tokens": 64,
                                                "max_num_seqs": 100})
    with pytest.raises(InputError) as err:
        _run(path)
    assert (err.value.line, err.value.field) == (1, "config.max_num_batched_tokens")
    path = _trace(tmp_path / "u.jsonl", config={"max_num_active_seqs": 200})
    with pytest.raises(InputError, match="200 is above max_num_seqs 128") as err:
        _run(path)
    assert err.value.field == "config.max_num_active_seqs"
    # a flag over the config line: named as the option
    with pytest.raises(InputError) as err:
        _run(_trace(tmp_path / "v.jsonl", config={"max_num_seqs": 100}),
             max_num_batched_tokens=64)
    assert err.value.field == "max_num_batched_tokens"


def test_a_config_line_budget_counts_as_set(tmp_path):
    # the scheduler oracle's cases set their budget in the config line: never raised or lowered
    path = _trace(tmp_path / "t.jsonl", config={"max_num_batched_tokens": 512,
                                                "max_model_len": 128, "max_num_seqs": 2})
    s, _ = _run(path)
    assert (s.config["max_num_batched_tokens"], s.config["max_num_seqs"]) == (512, 2)


def test_cache_mode_has_no_scheduler(tmp_path):
    path = _trace(tmp_path / "t.jsonl")
    s = replay(path, ReplayOptions(mode="cache", max_num_batched_tokens=8, max_num_seqs=100),
               None)
    assert s.config["max_num_seqs"] == 100


def test_a_models_max_model_len_applies(tmp_path):
    # llama-3.1-8b's 131,072-token context: with chunked prefill off the budget rises to it
    s, _ = _run(_trace(tmp_path / "t.jsonl", n=2), model="llama-3.1-8b", num_blocks=512,
                enable_chunked_prefill=False)
    assert (s.config["max_model_len"], s.config["max_num_batched_tokens"]) == (131072, 131072)


@pytest.mark.parametrize(("budget", "method"), [(4, "eagle3"), (3, "ngram")])
def test_a_budget_past_the_lookahead_slots_runs(tmp_path, budget, method):
    r = runner.invoke(app, ["replay", _trace(tmp_path / "t.jsonl"), "--max-num-batched-tokens",
                            str(budget), "--max-num-seqs", "2", "--spec-method", method,
                            "--num-speculative-tokens", "3", "--spec-acceptance-rate", "0.5",
                            "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["config"]["max_num_batched_tokens"] == budget


def test_kvcli_config_refuses_a_budget_the_lookahead_slots_fill():
    base = ["config", "llama-3.1-8b", "--gpu-memory-gib", "80", "--max-num-seqs", "2",
            "--spec-method", "eagle3", "--spec-model", "eagle3-llama-3.1-8b", "--spec-tokens",
            "3", "--max-num-batched-tokens"]
    r = runner.invoke(app, [*base, "3"])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith("error: option --max-num-batched-tokens: 3 leaves no token to "
                               "schedule beside eagle3's 3 lookahead slots"), r.stderr
    assert runner.invoke(app, [*base, "4"]).exit_code == 0
