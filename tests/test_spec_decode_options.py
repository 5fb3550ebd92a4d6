"""Speculative decoding's options and acceptance model (docs/replay-engine.md, "Speculative
decoding"): `--speculative-config` read as vLLM spells it, what is refused and why, and the
acceptance draws both the replay and the oracle harness (tests/data/sched_spec) use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine.spec_accept import accepted_drafts, mean_tokens_per_step
from kvcore.engine.spec_config import speculative_settings
from kvcore.errors import InputError

TRACE = str(Path(__file__).parents[1] / "traces" / "shared-prefix.jsonl")


def test_the_draws_are_a_pure_function_of_their_inputs():
    got = [accepted_drafts(0, f"r{i}", j, 4, 0.6) for i in range(3) for j in range(4)]
    assert got == [accepted_drafts(0, f"r{i}", j, 4, 0.6) for i in range(3) for j in range(4)]
    # pinned: the oracle harness draws the same (its answers were recorded with these)
    assert got == [0, 0, 0, 2, 0, 0, 2, 0, 0, 1, 1, 0]
    assert accepted_drafts(1, "r0", 0, 4, 0.6) != accepted_drafts(0, "r0", 0, 4, 0.6) or \
        accepted_drafts(1, "r0", 1, 4, 0.6) != accepted_drafts(0, "r0", 1, 4, 0.6)
    assert {accepted_drafts(7, "x", j, 5, 1.0) for j in range(50)} == {5}
    assert {accepted_drafts(7, "x", j, 5, 0.0) for j in range(50)} == {0}


def test_the_mean_follows_the_model():
    draws = [1 + accepted_drafts(3, f"q{i}", j, 3, 0.7) for i in range(200) for j in range(50)]
    assert abs(sum(draws) / len(draws) - mean_tokens_per_step(3, 0.7)) < 0.03
    assert mean_tokens_per_step(3, 0.7) == pytest.approx(1 + 0.7 + 0.49 + 0.343)
    assert mean_tokens_per_step(3, 1.0) == 4.0


def test_speculative_config_is_read_as_vllm_spells_it():
    assert speculative_settings('{"method": "ngram", "num_speculative_tokens": 5, '
                                '"prompt_lookup_max": 4, "prompt_lookup_min": 2}') == {
        "spec_method": "ngram", "num_speculative_tokens": 5}
    assert speculative_settings('{"method": "eagle3", "num_speculative_tokens": 3, "model": '
                                '"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", '
                                '"disable_lookahead_block_hashes": true}') == {
        "spec_method": "eagle3", "num_speculative_tokens": 3,
        "disable_lookahead_block_hashes": True,
        "spec_model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}
    for text, message in [
            ('{"method": "draft_model", "num_speculative_tokens": 3}', ("method "
             "'draft_model' is a vLLM method kvcli does not model yet")),
            # (a deprecated name is mtp, with mtp's keys: tests/test_spec_method_names.py)
            ('{"method": "qwen3_5_mtp", "num_speculative_tokens": 3, "model": "x"}',
             ("key(s) 'model' not modelled (kvcli reads method, num_speculative_tokens, "
              "disable_lookahead_block_hashes for mtp)")),
            ('{"method": "ngram_gpu", "num_speculative_tokens": 3}', ("method "
             "'ngram_gpu' is a vLLM method kvcli does not model yet")),
            ('{"method": "mtp", "num_speculative_tokens": 3, "model": "x"}',
             ("key(s) 'model' not modelled (kvcli reads method, num_speculative_tokens, "
              "disable_lookahead_block_hashes for mtp)")),
            ('{"method": "eagle", "num_speculative_tokens": 3, "model": 7}',
             "model must be a string (the draft model), got 7"),
            ('{"method": "eagle3", "num_speculative_tokens": 3, "prompt_lookup_max": 2}',
             "key(s) 'prompt_lookup_max' not modelled"),
            ('{"method": "lookup", "num_speculative_tokens": 3}', "not a vLLM 0.33 method"),
            ('{"num_speculative_tokens": 3}', "method 'None'"),
            ('{"method": "ngram"}', "needs num_speculative_tokens (--spec-tokens K"),
            ('{"method": "ngram", "num_speculative_tokens": 0}',
             "num_speculative_tokens must be an integer >= 1, got 0"),
            ('{"method": "ngram", "num_speculative_tokens": true}', "got true"),
            ('{"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 0}',
             "prompt_lookup_max must be an integer >= 1, got 0"),
            ('{"method": "ngram", "num_speculative_tokens": 2, "model": "x"}',
             "key(s) 'model' not modelled"),
            ("[3]", "must be a JSON object")]:
        with pytest.raises(InputError, match=None) as err:
            speculative_settings(text)
        assert message in err.value.message and err.value.field == "speculative_config"


@pytest.mark.parametrize("args, message", [
    (["--num-speculative-tokens", "3"], ("option --num-speculative-tokens: needs "
     "spec_acceptance_rate (--spec-acceptance-rate R")),
    (["--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}',
      "--num-speculative-tokens", "2"], ("option --num-speculative-tokens: and "
     "--speculative-config's num_speculative_tokens are mutually exclusive")),
    (["-sc", '{"method": "ngram"}', "--spec-method", "ngram", "--spec-tokens", "2"],
     "option --spec-method: and --speculative-config's method are mutually exclusive"),
    (["--spec-method", "draft_model", "--spec-tokens", "2"], ("option --spec-method: method "
     "'draft_model' is a vLLM method kvcli does not model yet")),
    (["--spec-method", "eagle3", "--spec-tokens", "2", "--spec-acceptance-rate", "0.5",
      "--prefix-match-unit", "8"], ("option --prefix-match-unit: vLLM refuses to start: "
     "Invalid prefix_match_unit=8; with a single KV cache group")),
    (["-sc", ('{"method": "eagle3", "num_speculative_tokens": 2, '
      '"disable_lookahead_block_hashes": true}'), "--spec-acceptance-rate", "0.5", "--model",
      "llama-3.1-8b", "--gpu-memory-gib", "24"], ("option --speculative-config's method: "
     "eagle3 with a pool sized from a model needs its draft model to size it with: "
     "spec_model")),
    # (a value the JSON gave is refused at its key there, not as a flag nobody typed; the
    # flag's own value as the flag)
    (["-sc", '{"method": "ngram", "num_speculative_tokens": 3}'], ("option "
     "--speculative-config's num_speculative_tokens: needs spec_acceptance_rate")),
    (["--spec-method", "eagle3", "-sc", '{"num_speculative_tokens": 2}',
      "--spec-acceptance-rate", "0.5", "--model", "llama-3.1-8b", "--gpu-memory-gib", "24"],
     "option --spec-method: eagle3 with a pool sized from a model needs its draft model"),
    (["-sc", '{"method": "mtp", "num_speculative_tokens": 2}', "--spec-acceptance-rate",
      "0.5", "--model", "llama-3.1-8b", "--gpu-memory-gib", "24"], ("option "
     "--speculative-config's method: mtp with llama-3.1-8b (llama): vLLM 0.33 refuses it")),
    (["-sc", '{"method": "eagle3", "num_speculative_tokens": 2, "model": "no-such-draft"}',
      "--spec-acceptance-rate", "0.5", "--model", "llama-3.1-8b", "--gpu-memory-gib", "24"],
     "option --speculative-config's model: draft model 'no-such-draft' is neither"),
    (["--num-speculative-tokens", "2", "--spec-acceptance-rate", "1.5"],
     "option --spec-acceptance-rate: must be at most 1, got 1.5"),
    (["--num-speculative-tokens", "2", "--spec-acceptance-rate", "0.5", "--mode", "cache"],
     "option --num-speculative-tokens: needs engine mode"),
    (["--num-speculative-tokens", "-1"], "option --num-speculative-tokens: must be >= 0"),
])
def test_refusals_are_one_line_exit_2(args, message):
    r = CliRunner().invoke(app, ["replay", TRACE, "--json", *args])
    assert r.exit_code == 2, r.output
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.parametrize("args, message", [
    (["-sc", '{"method": "mtp", "num_speculative_tokens": 2}'],
     "option --speculative-config's method: mtp with llama-3.1-8b (llama): vLLM 0.33 refuses"),
    (["--spec-method", "mtp", "--spec-tokens", "2"],
     "option --spec-method: mtp with llama-3.1-8b (llama): vLLM 0.33 refuses"),
    (["-sc", '{"method": "eagle3", "num_speculative_tokens": 2}'],
     "option --speculative-config's model: eagle3 needs its draft model"),
    (["--spec-method", "eagle3", "-sc", '{"num_speculative_tokens": 2}'],
     "option --spec-model: eagle3 needs its draft model"),
    (["-sc", '{"method": "eagle3", "num_speculative_tokens": 2, "model": "no-such-draft"}'],
     "option --speculative-config's model: draft model 'no-such-draft' is neither"),
])
def test_kvcli_config_names_the_key_the_json_gave(args, message):
    r = CliRunner().invoke(app, ["config", "llama-3.1-8b", *args])
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith("error: " + message), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_vllms_three_spellings_are_one_setting():
    def config(*args):
        r = CliRunner().invoke(app, ["replay", TRACE, "--json", "--spec-acceptance-rate", "0.5",
                                     *args])
        assert r.exit_code == 0, r.stderr
        return json.loads(r.stdout)["config"]["num_speculative_tokens"]

    assert [config("--spec-method", "ngram", "--spec-tokens", "3"),
            config("-sc", '{"method": "ngram"}', "--spec-tokens", "4"),
            config("--num-speculative-tokens", "2")] == [3, 4, 2]


def test_the_summary_reports_vllms_spec_decoding_stats():
    r = CliRunner().invoke(app, ["replay", TRACE, "--json", "--speculative-config",
                                 '{"method": "ngram", "num_speculative_tokens": 2}',
                                 "--spec-acceptance-rate", "1"])
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    s = d["spec_decode"]
    # every draft accepted: each verification yields 3 tokens, each position accepted each time
    assert s["num_draft_tokens"] == 2 * s["num_drafts"] == s["num_accepted_tokens"] > 0
    assert s["acceptance_rate"] == 1.0 and s["mean_acceptance_length"] == 3.0
    assert s["accepted_per_position"] == [s["num_drafts"]] * 2
    assert d["config"]["num_speculative_tokens"] == 2 and d["config"]["spec_seed"] == 0
    off = json.loads(CliRunner().invoke(app, ["replay", TRACE, "--json"]).stdout)
    assert "spec_decode" not in off and "num_speculative_tokens" not in off["config"]
    assert off["steps"] > d["steps"]


def test_a_clusters_stats_are_its_replicas_summed():
    from kvcore.engine.spec_decode import SpecStats

    a, b = SpecStats(), SpecStats()
    for d, n in [(3, 3), (3, 0), (2, 1)]:
        a.add(d, n)
    b.add(4, 4)
    s = SpecStats.summed([a.as_dict(), b.as_dict()]).as_dict()
    assert (s["num_drafts"], s["num_draft_tokens"], s["num_accepted_tokens"]) == (4, 12, 8)
    assert s["accepted_per_position"] == [3, 2, 2, 1]
    assert s["acceptance_rate"] == 8 / 12 and s["mean_acceptance_length"] == 3.0


def test_the_tables_scheduling_row():
    from kvcli.replay_view import scheduling_text

    def row(spec=None, **cfg):
        return scheduling_text({"config": {"async_scheduling": True, **cfg}, "spec_decode": spec})

    assert [row(), row(async_scheduling=False), row(pipeline_parallel_size=3),
            row(async_scheduling=False, pipeline_parallel_size=3)] == [
        "async (batch queue of 2)", "sync", "async (batch queue of 4)",
        "sync (batch queue of 3)"]
    spec = {"acceptance_rate": 0.5084, "num_draft_tokens": 70332}
    assert row(spec, num_speculative_tokens=3, spec_acceptance_rate=0.7,
               spec_method="ngram") == (
        "async (batch queue of 2); ngram drafts x 3: 50.8% of 70,332 accepted (model: 0.7 each)")
    # (the method as run: it said ngram for every method)
    assert row(spec, num_speculative_tokens=3, spec_acceptance_rate=0.7,
               spec_method="mtp").startswith("async (batch queue of 2); mtp drafts x 3: ")


def test_the_models_options_without_drafts_are_said_to_do_nothing():
    r = CliRunner().invoke(app, ["replay", TRACE, "--json", "--spec-acceptance-rate", "0.5",
                                 "--spec-seed", "3"])
    assert r.exit_code == 0
    assert ("warning: option(s) spec_acceptance_rate, spec_seed: no effect without speculative "
            "decoding (num_speculative_tokens, or speculative_config)") in r.stderr.splitlines()


def test_eagle3_in_the_legacy_hash_mode_runs_and_costs_hits():
    """The EAGLE block drop: a hit loses its last block (vLLM recomputes its draft KV), and
    the K lookahead slots take room: fewer hit tokens than ngram on the same pool."""
    def run(method):
        r = CliRunner().invoke(app, ["replay", TRACE, "--json", "--num-blocks", "400",
                                     "--spec-method", method, "--spec-tokens", "4",
                                     "--spec-acceptance-rate", "0.5",
                                     "--disable-lookahead-block-hashes"])
        assert r.exit_code == 0, r.stderr
        return json.loads(r.stdout)

    ngram, eagle = run("ngram"), run("eagle3")
    assert eagle["config"]["spec_method"] == "eagle3"
    assert eagle["config"]["disable_lookahead_block_hashes"] is True
    assert "disable_lookahead_block_hashes" not in ngram["config"]
    assert eagle["hit_tokens"] < ngram["hit_tokens"]
