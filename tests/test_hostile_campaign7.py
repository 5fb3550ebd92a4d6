"""A seventh hostile campaign, over the readers of the last session (the pre-Llama decoders'
aliases, DBRX, ChatGLM, ModelOpt and its hf_quant_config.json, GPTQ dynamic rules,
compressed-tensors groups, `kvcli script`): valid configs mutated by
tests/data/hostile_configs/mutate_configs.py (its README: how many drawn, found, fixed). Each
finding is kept here as the one edit of a tests/data config that shows it (the draw that found it
in the comment, ``seed:index``): `kvcli config` refuses it in one line naming the file and the
key, exit code 2, where it gave a traceback, hung or sized it quietly."""

from __future__ import annotations

import json

import pytest
from hostile_edits import DATA, mutated, say, top
from test_hostile_options import refused, runner

from kvcli.app import app

RULES = "weights_census/quant_rules/"
GPTQ = RULES + "llama-3-1-8b-gptq-dynamic.config.json"
CT = RULES + "llama-ct-groups.config.json"
NVFP4 = "weights_census/modelopt/llama-modelopt-nvfp4.config.json"
NESTED = ("repeats a group that itself repeats (as \"(a+)+\" does): matching it can take "
          "exponential time, and vLLM's re.match hangs on a module path it nearly matches; "
          "write it without the nested repeat")


def _rename_rule(new: str):
    def edit(cfg):
        rules = cfg["quantization_config"]["dynamic"]
        first = next(iter(rules))
        cfg["quantization_config"]["dynamic"] = {new if k == first else k: v
                                                 for k, v in rules.items()}
    return edit


def _target(new: str):
    def edit(cfg):
        cfg["quantization_config"]["config_groups"]["group_0"]["targets"][0] = new
    return edit


def _quant(key: str, value):
    def edit(cfg):
        cfg["quantization_config"][key] = value
    return edit


# -- GPTQ dynamic rules and compressed-tensors re: entries: a nested repeat hung (re.match
# backtracking, cut by the campaign's alarm; vLLM hangs as well), a compressed-tensors
# pattern that is no regex ended in re.error's traceback, an ignore that is no list in a
# TypeError -----------------------------------------------------------------------------------

CASES = [
    # 11:45, 21:... (slow over 6 s, cut)
    (GPTQ, _rename_rule("+:(.*.*)*z$"), "quantization_config.dynamic",
     f"rule '+:(.*.*)*z$' {NESTED}"),
    (GPTQ, _rename_rule("-:(.+)+$x"), "quantization_config.dynamic",
     f"rule '-:(.+)+$x' {NESTED}"),
    (GPTQ, _rename_rule("(\\w+\\.?)+!"), "quantization_config.dynamic",
     f"rule '(\\\\w+\\\\.?)+!' {NESTED}"),
    # (refused before, kept: the rule's words are shared now)
    (GPTQ, _rename_rule("+:.*("), "quantization_config.dynamic",
     ("rule '+:.*(' is not a regular expression (missing ), unterminated subpattern at "
      "position 2)")),
    # 11:93, 11:273, 11:377 (traceback: re.error)
    (CT, _target("re:*"), "quantization_config.config_groups",
     "'re:*' is not a regular expression (nothing to repeat at position 0)"),
    (CT, _target("re:(a|b"), "quantization_config.config_groups",
     ("'re:(a|b' is not a regular expression (missing ), unterminated subpattern at "
      "position 0)")),
    (CT, _target("re:(.+)+$x"), "quantization_config.config_groups", f"'re:(.+)+$x' {NESTED}"),
    (CT, _quant("ignore", ["lm_head", "re:["]), "quantization_config.ignore",
     "'re:[' is not a regular expression (unterminated character set at position 0)"),
    # 11:259, 11:319, 11:454 (traceback: TypeError: 'float' object is not iterable)
    (CT, _quant("ignore", 0.5), "quantization_config.ignore",
     "must be a list of module paths and re: patterns, got 0.5"),
    (CT, _quant("ignore", [True]), "quantization_config.ignore",
     "must be a list of module paths and re: patterns, got [True]"),
    # 11:601, 11:1121 (traceback: ZeroDivisionError)
    (NVFP4, _quant("group_size", False), "quantization_config.group_size",
     "must be a positive integer, got False: vLLM divides each weight's width by it"),
    (NVFP4, _quant("group_size", -16), "quantization_config.group_size",
     "must be a positive integer, got -16: vLLM divides each weight's width by it"),
    (NVFP4, _quant("group_size", 1e308 * 10), "quantization_config.group_size",
     "vLLM refuses it: \"group_size must be an integer, got <class 'float'>\""),
    # 11:48 (sized by model_type, exit 0; vLLM's registry refuses it)
    ("perf_cases/models/llama-3.1-8b.config.json", top("architectures", [1]), "architectures",
     "must be a list of architecture names, got [1]"),
    # 11:57 (refused as 'num_hidden_layers', a key the file does not have)
    ("gpt_family/gpt2.config.json", top("n_layer", 2**70), "n_layer",
     "expected an integer >= 1 and <= 100,000, got 1180591620717411303424"),
    ("gpt_family/gpt2.config.json", top("n_embd", 2**63), "n_embd",
     "expected an integer >= 1 and below 2^63, got 9223372036854775808"),
    ("gpt_family/chatglm3-6b.config.json", top("multi_query_group_num", "x"),
     "multi_query_group_num", "expected an integer >= 1, got 'x'"),
    ("gpt_family/chatglm3-6b.config.json", top("seq_length", -1), "seq_length",
     "expected an integer >= 1, got -1"),
    # 21:427 (traceback: OverflowError: cannot convert float infinity to integer)
    ("lfm2/lfm2-1.2b-style.config.json", top("block_ffn_dim_multiplier", float("inf")),
     "block_ffn_dim_multiplier", "makes the feed-forward inf wide, past 2^63"),
    # (1e300 times 2 x 12,288 / 3)
    ("lfm2/lfm2-1.2b-style.config.json", top("block_ffn_dim_multiplier", 1e300),
     "block_ffn_dim_multiplier", "makes the feed-forward 8.192e+303 wide, past 2^63"),
    # sweep: Nemotron-H's sliding_window "x", 0, -1, 1.5, inf, [1], true sized full
    # attention without a word (vLLM builds a SlidingWindowSpec of whatever it is)
    ("mamba/nemotron-nano-9b-v2.config.json", top("sliding_window", "x"), "sliding_window",
     "expected an integer >= 1 and below 2^63, or null, got 'x'"),
    ("mamba/nemotron-nano-9b-v2.config.json", top("sliding_window", 0), "sliding_window",
     "expected an integer >= 1 and below 2^63, or null, got 0"),
    ("mamba/nemotron-nano-9b-v2.config.json", top("sliding_window", True), "sliding_window",
     "expected an integer >= 1 and below 2^63, or null, got True"),
    # (nested configs of the wrong type: DBRX's defaults were taken without a word)
    ("gpt_family/dbrx-instruct.config.json", top("attn_config", [1]), "attn_config",
     "must be an object, got [1]"),
    ("gpt_family/dbrx-instruct.config.json", top("ffn_config", "x"), "ffn_config",
     "must be an object, got 'x'"),
]


@pytest.mark.parametrize("base, edit, field, message", CASES)
def test_a_mutant_that_failed_is_refused_in_one_line(tmp_path, base, edit, field, message):
    path = mutated(tmp_path, base, edit)
    line = refused(["config", "--model-config", path, "--gpu-memory-gib", "80"],
                   say(path, field, message))
    assert line == say(path, field, message)


@pytest.mark.parametrize("text, kind", [("[1]", "an array"), ("null", "null"),
                                        ("true", "a boolean"), ('"x"', "a string")])
def test_a_config_or_quant_file_that_is_no_object_says_what_it_holds(tmp_path, text, kind):
    path = tmp_path / "config.json"
    path.write_text(text)
    refused(["config", "--model-config", str(path), "--gpu-memory-gib", "80"],
            f"error: {path}: must hold a JSON object, got {kind}")
    # (the same reader reads hf_quant_config.json, which 'a config.json' misnamed)
    beside = tmp_path / "hf_quant_config.json"
    path.write_text((DATA / "weights_census/modelopt/llama-modelopt-nvfp4-file.config.json")
                    .read_text())
    beside.write_text(text)
    refused(["config", "--model-config", str(path), "--gpu-memory-gib", "80"],
            f"error: {beside}: must hold a JSON object, got {kind}")


# -- a sample of mutants that passed before and pass now: the same sizes, or the same refusal --

@pytest.mark.parametrize("base, edit, field, message", [
    # 21:0, 21:23, 21:82, 21:120: refused on the base and on this branch, in the same words
    ("lfm2/lfm2-1.2b-style.config.json", top("conv_dim", True), "conv_dim",
     "expected a non-negative integer below 2^63, got True"),
    ("mamba_only/tiny-falcon-mamba.config.json", top("expand", -0.0), "expand",
     "expected a positive number, got -0.0"),
    ("mamba/nemotron-nano-9b-v2.config.json", top("hidden_size", [1]), "hidden_size",
     "expected a non-negative integer below 2^63, got [1]"),
    ("sched_gemma/gemma4_small.json", top("max_position_embeddings", 10**30),
     "max_position_embeddings",
     "expected a non-negative integer below 2^63, got 1000000000000000000000000000000"),
])
def test_a_mutant_refused_before_is_refused_the_same(tmp_path, base, edit, field, message):
    path = mutated(tmp_path, base, edit)
    refused(["config", "--model-config", path, "--gpu-memory-gib", "80"],
            say(path, field, message))


@pytest.mark.parametrize("base, edit, blocks", [
    # 21:... a separator makes a nested repeat safe: each round ends at a dot \d cannot take
    (GPTQ, _rename_rule("+:model\\.(\\d+\\.)*x"), None),
    (CT, _target("re:(?:model\\.layers\\.\\d+\\.)+self_attn\\..*"), None),
    # (twice the layers: a little under half the blocks, the weights grown too)
    ("gpt_family/gpt2.config.json", top("n_layer", 24), 66_637),
])
def test_a_mutant_that_passed_still_sizes(tmp_path, base, edit, blocks):
    path = mutated(tmp_path, base, edit)
    res = runner.invoke(app, ["config", "--model-config", path, "--gpu-memory-gib", "80",
                              "--json"])
    assert res.exit_code == 0, res.output
    if blocks is not None:
        assert json.loads(res.stdout)["num_blocks"] == blocks


# -- --speculative-config's max_model_len under EAGLE: null (vLLM's default) was refused as
# 'not modelled', and a value vLLM's own check refuses ("x", 0) was too, not in its words -----

EAGLE = ('{"method": "eagle3", "num_speculative_tokens": 2, "max_model_len": %s, '
         '"model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}')


def test_an_eagle_draft_max_model_len_of_null_is_vllms_default():
    res = runner.invoke(app, ["config", "llama-3.1-8b", "--gpu-memory-gib", "80",
                              "--speculative-config", EAGLE % "null", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["draft"] is not None


@pytest.mark.parametrize("value, shown", [('"x"', '"x"'), ("0", "0"), ("true", "true")])
def test_an_eagle_draft_max_model_len_vllm_refuses_is_refused_in_its_words(value, shown):
    refused(["config", "llama-3.1-8b", "--gpu-memory-gib", "80", "--speculative-config",
             EAGLE % value],
            f"error: option --speculative-config: max_model_len must be an integer >= 1, got "
            f"{shown}")


# -- kvcli script: an integer past 64 bits (orjson reads it as a float) was refused as 'a
# non-empty list of integer token ids', or 'got 1.1805916207174113e+21', as if the file held
# a float -----------------------------------------------------------------------------------

FLOATED = "1.18059e+21 (an integer this large reads as a float)"


@pytest.mark.parametrize("where, field, message", [
    ("prompt", "prompt", f"must hold integers below 2^64, got {FLOATED}"),
    ("token", "token", f"must be an integer token id below 2^64, got {FLOATED}"),
    ("num_blocks", "num_blocks", f"must be an integer below 2^63, got {FLOATED}"),
])
def test_a_script_integer_past_64_bits_says_so(tmp_path, where, field, message):
    lines = [{"config": {"groups": [{"type": "full"}], "block_size": 4, "num_blocks": 8}},
             {"op": "new", "id": "a", "prompt": [1, 2, 3]},
             {"op": "decode", "id": "a", "token": 5}]
    if where == "prompt":
        lines[1]["prompt"][0] = 2**70
    elif where == "token":
        lines[2]["token"] = 2**70
    else:
        lines[0]["config"]["num_blocks"] = 2**70
    path = tmp_path / "ops.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))   # (the integer's digits)
    line = {"num_blocks": 1, "prompt": 2, "token": 3}[where]
    refused(["script", str(path)], say(f"{path}:{line}", field, message))
