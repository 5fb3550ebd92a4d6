"""A draft whose RoPE does not only size its cache lowers the target's max_model_len to its own
(`kvcore.sizing.draft_len`), against vLLM 0.33's answers (tests/data/draft_max_len)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_spec_budget_warning import vllm_words
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.models.eagle_draft import load_draft
from kvcore.models.presets import load_preset
from kvcore.sizing.draft_len import limit_to_draft, shares_target_positions
from kvcore.sizing.resolve import resolve_kv_cache_config

HERE = Path(__file__).parent / "data" / "draft_max_len"
ANSWERS = json.loads((HERE / "answers.json").read_text())
TARGET = str(HERE.parent / "eagle_draft" / "1-llama31-8b-eagle3" / "target" / "config.json")
YARN = str(HERE / "drafts" / "yarn-2048" / "config.json")
LLAMA3 = str(HERE / "drafts" / "llama3-16384" / "config.json")
WARNING = ("The draft model's max_model_len (2048) is smaller than the target model's ({}) and "
           "the V2 model runner can't skip speculation for longer sequences; reducing "
           "max_model_len to 2048.")


def _spec(path: str, method: str = "eagle3") -> str:
    return json.dumps({"method": method, "num_speculative_tokens": 3, "model": path})


@pytest.mark.parametrize("case", ANSWERS["cases"],
                         ids=lambda c: f"{c['draft']}-{c['max_model_len']}")
def test_the_length_vllm_runs_at(case: dict) -> None:
    path = str(HERE / "drafts" / case["draft"] / "config.json")
    res = resolve_kv_cache_config(model_config=TARGET, num_blocks=100000,
                                  max_model_len=case["max_model_len"],
                                  draft=(path, case["method"]))
    assert case["use_v2_model_runner"]
    assert res.ctx.max_model_len == case["target_after"]
    assert shares_target_positions(res.draft) == case["shares_positions"]
    assert ([res.draft_limit.warning()] if res.draft_limit else []) == case["warnings"]
    # (the draft's own length, capped at the target's: vLLM's draft_model_config)
    own = min(res.draft.geometry.default_max_model_len, case["target_before"])
    assert own == case["draft_max_model_len"]


def test_the_rule_alone() -> None:
    g = load_preset("llama-3.1-8b")
    yarn = load_draft(YARN, "eagle3", g)
    assert limit_to_draft(yarn, 131072) == (2048, (2048, 131072))
    assert limit_to_draft(yarn, 2048) == (2048, None)
    assert limit_to_draft(load_draft(LLAMA3, "eagle3", g), 131072) == (131072, None)
    assert limit_to_draft(None, 5) == (5, None)


def test_config_says_it_once_and_explains_it() -> None:
    r = CliRunner().invoke(app, ["config", "llama-3.1-8b", "--gpu-memory-gib", "80", "--json",
                                 "--speculative-config", _spec(YARN)])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["max_model_len"] == 2048
    assert data["max_model_len_fits"] == 2048
    assert data["draft"]["max_model_len_lowered_from"] == 131072
    # (then vLLM's next: drafts on the default step budget of 2,048 tokens)
    assert data["warnings"] == [WARNING.format(131072), vllm_words(2048)]
    assert r.stderr.count("reducing max_model_len") == 1
    r = CliRunner().invoke(app, ["config", "llama-3.1-8b", "--gpu-memory-gib", "80",
                                 "--max-model-len", "4096", "--speculative-config", _spec(YARN)])
    assert ("; max_model_len 4,096 lowered to the draft's 2,048 (its RoPE does not only size a "
            "cache: vLLM's V2 model runner cannot skip speculation past it)") in r.stdout
    assert "max concurrency at max_model_len 2,048 = " in r.stdout
    assert r.stderr.count("reducing max_model_len") == 1


def test_a_raised_draft_keeps_the_length() -> None:
    r = CliRunner().invoke(app, ["config", "llama-3.1-8b", "--gpu-memory-gib", "80", "--json",
                                 "--speculative-config", _spec(LLAMA3)])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert (data["max_model_len"], data["draft"]["max_model_len_lowered_from"]) == (131072, None)
    assert "reducing" not in r.stderr


@pytest.mark.parametrize("case", ANSWERS["engine_args"],
                         ids=lambda c: f"{c['draft']}-{c['max_model_len']}-"
                         f"{c['enable_chunked_prefill']}")
def test_the_scheduler_defaults_come_before_the_lowering(case: dict) -> None:
    """vLLM draws max_num_batched_tokens from the length before the draft lowers it (chunked
    prefill off: 131,072 at a max_model_len of 2,048)."""
    path = str(HERE / "drafts" / case["draft"] / "config.json")
    args = ["config", "--model-config", TARGET, "--num-blocks", "100000", "--json",
            "--speculative-config", _spec(path)]
    args += [] if case["max_model_len"] is None else ["--max-model-len",
                                                      str(case["max_model_len"])]
    args += [] if case["enable_chunked_prefill"] else ["--no-enable-chunked-prefill"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert (data["max_model_len"], data["max_num_batched_tokens"], data["max_num_seqs"]) == (
        case["model_max_model_len"], case["max_num_batched_tokens"], case["max_num_seqs"])


def test_a_replay_runs_at_the_lowered_length(tmp_path: Path) -> None:
    """A 2,100-token request is refused at 2,048 (vLLM's input check), said once."""
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"timestamp": 0, "input_length": 100, "output_length": 4,
                                 "hash_ids": [1]}) + "\n"
                     + json.dumps({"timestamp": 1, "input_length": 2100, "output_length": 4,
                                   "hash_ids": [2, 3, 4, 5, 6]}) + "\n")
    args = ["replay", str(trace), "--json", "--model", "llama-3.1-8b", "--gpu-memory-gib", "80",
            "--spec-acceptance-rate", "0.5", "--max-model-len", "4096", "--skip-bad",
            "--speculative-config", _spec(YARN)]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert (data["finished"], data["rejected"]) == (1, 1)
    assert data["warnings"].count(WARNING.format(4096)) == 1
    assert r.stderr.count("reducing max_model_len") == 1
    r = CliRunner().invoke(app, [*args[:-1], _spec(LLAMA3)])
    assert r.exit_code == 0, r.output
    assert (json.loads(r.stdout)["finished"], json.loads(r.stdout)["rejected"]) == (2, 0)


def test_a_replays_budget_comes_before_the_lowering(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"timestamp": 0, "input_length": 100, "output_length": 4,
                                 "hash_ids": [1]}) + "\n")
    r = CliRunner().invoke(app, ["replay", str(trace), "--json", "--model-config", TARGET,
                                 "--num-blocks", "1000", "--spec-acceptance-rate", "0.5",
                                 "--no-enable-chunked-prefill", "--speculative-config",
                                 _spec(YARN)])
    assert r.exit_code == 0, r.output
    c = json.loads(r.stdout)["config"]
    assert (c["max_model_len"], c["max_num_batched_tokens"], c["max_num_seqs"]) == (
        2048, 131072, 128)       # (engine_args' yarn-2048, chunked prefill off)
