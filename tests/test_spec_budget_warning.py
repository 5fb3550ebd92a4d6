"""vLLM 0.33's start-up warning where speculative decoding runs on a step budget below 8,192
tokens (`VllmConfig._set_max_num_scheduled_tokens`: max_num_scheduled_tokens is set to
max_num_batched_tokens, and warned of below 8,192): `kvcli replay` and `kvcli config` say it
word for word, on the budget after vLLM's defaults (`kvcore.engine.sched_limits`)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvcli.app import app

runner = CliRunner()


def vllm_words(budget: int) -> str:
    return (f"max_num_scheduled_tokens is set to {budget} based on the speculative decoding "
            "settings. This may lead to suboptimal performance. Consider increasing "
            "max_num_batched_tokens to accommodate the additional draft token slots, or "
            "decrease num_speculative_tokens.")


NGRAM = ["--num-speculative-tokens", "3", "--spec-method", "ngram",
         "--spec-acceptance-rate", "0.5"]


def _replay(tmp_path, *args: str) -> tuple[dict, str]:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"prompt_token_ids": list(range(40)), "output_length": 8}) + "\n")
    res = runner.invoke(app, ["replay", str(path), "--json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout), res.stderr


@pytest.mark.parametrize("args, budget", [
    ([], 2048),                                         # SchedulerConfig's default
    (["--max-num-batched-tokens", "8191"], 8191),
    (["--performance-mode", "throughput"], 4096),       # vLLM's default doubled
])
def test_a_replay_with_drafts_under_8192_tokens_a_step_says_it(tmp_path, args, budget):
    doc, err = _replay(tmp_path, *NGRAM, *args)
    assert doc["config"]["max_num_batched_tokens"] == budget
    assert doc["warnings"][0] == vllm_words(budget)
    assert f"warning: {vllm_words(budget)}\n" in err


@pytest.mark.parametrize("args", [
    ["--max-num-batched-tokens", "8192"],
    ["--gpu", "h100"],              # vllm serve's H100 default budget: 8,192
])
def test_a_budget_of_8192_or_more_is_not_warned_of(tmp_path, args):
    doc, err = _replay(tmp_path, *NGRAM, *args)
    assert doc["config"]["max_num_batched_tokens"] == 8192
    assert not [w for w in doc["warnings"] if "max_num_scheduled_tokens" in w]
    assert "max_num_scheduled_tokens" not in err


def test_no_drafts_no_warning(tmp_path):
    doc, err = _replay(tmp_path)
    assert doc["config"]["max_num_batched_tokens"] == 2048
    assert "max_num_scheduled_tokens" not in err + json.dumps(doc["warnings"])


@pytest.mark.parametrize("extra, budget", [(["--max-num-batched-tokens", "4096"], 4096),
                                           ([], 2048), (["--gpu", "h100"], None)])
def test_kvcli_config_says_it_too(extra, budget):
    res = runner.invoke(app, ["config", "llama-3.1-8b", "--gpu-memory-gib", "80",
                              "--max-model-len", "8192", "--speculative-config",
                              '{"method": "ngram", "num_speculative_tokens": 3}', "--json",
                              *extra])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    said = [w for w in doc["warnings"] if "max_num_scheduled_tokens" in w]
    assert said == ([vllm_words(budget)] if budget else [])
    if budget:
        assert doc["warnings"][0] == said[0] and doc["max_num_batched_tokens"] == budget
