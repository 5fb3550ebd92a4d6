"""GPTQ's per-module rules (``dynamic``, ``modules_in_block_to_quantize``), compressed-tensors'
config groups and bitsandbytes checkpoints against vLLM 0.33.0's own model classes on the meta device, as an H100 builds them
(tests/data/weights_census/quant_rules/answers.json, TP 1, 2, 4 and 8, every rank): the bytes a
rank holds (`kvcore.models.gptq_rules`, `kvcore.models.ct_groups`), vLLM's refusals word for
word."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_weights_bytes
from tests.census_rows import built_ranks, vllms_words

DATA = Path(__file__).parent / "data"
HERE = DATA / "weights_census" / "quant_rules"
CASES = json.loads((HERE / "answers.json").read_text())["cases"]
runner = CliRunner()
# (vLLM packs the embedding and the LM head a catch-all regex reaches: sized since)
RE_ALL = "weights_census/quant_rules/llama-ct-groups-re-all.config.json"
BUILT = built_ranks({n: c for n, c in CASES.items() if "tp" in c},
                    label=lambda n: n.split("/")[-1])
# (refused at every TP: the config's rules, before any rank or while the first is built)
AT_EVERY_TP = [pytest.param(n, c["tp"]["1"][0]["refused"], id=n.split("/")[-1])
               for n, c in CASES.items() if "tp" in c and "refused" in c["tp"]["1"][0]]
BNB = [pytest.param(n, c["refused"], id=n.split("/")[-1]) for n, c in CASES.items()
       if "refused" in c]


def _config(name: str) -> dict:
    return json.loads((DATA / name).read_text())


@pytest.mark.parametrize(("name", "tp", "rank"), BUILT)
def test_bytes_per_rank_equal_vllms(name: str, tp: int, rank: int) -> None:
    rec = CASES[name]["tp"][str(tp)][rank]
    g = read_hf_config(_config(name), name=name)
    assert estimate_weights_bytes(g, tp) == sum(rec["param_bytes_by_dtype"].values())


@pytest.mark.parametrize(("name", "refused"), AT_EVERY_TP)
def test_a_rule_vllm_refuses_is_refused_with_its_words(name: str, refused: str) -> None:
    with pytest.raises(InputError) as e:
        read_hf_config(_config(name), name=name)
    assert e.value.message.endswith(f'"{vllms_words(refused)}"')
    assert e.value.field in ("quantization_config.dynamic", "quantization_config.config_groups",
                             "quantization_config.modules_in_block_to_quantize")


def test_the_census_draws_each_refusal() -> None:
    assert sorted(vllms_words(p.values[-1])[:30] for p in AT_EVERY_TP) == [
        "All MoE projections need to ha", "Detected some but not all shar",
        "GPTQ group activation ordering", "Marlin does not support group_",
        "Unsupported FusedMoe scheme", "Unsupported quantization confi"]


@pytest.mark.parametrize(("name", "refused"), BNB)
def test_bitsandbytes_is_refused_as_vllm_033_refuses_it(name: str, refused: str) -> None:
    # vLLM 0.33 has no bitsandbytes method (no quantization/bitsandbytes.py, no load format):
    # ModelConfig refuses the checkpoint before anything is built, at every TP
    assert vllms_words(refused).startswith("Unknown quantization method: bitsandbytes. Must "
                                            "be one of ['awq', ")
    res = runner.invoke(app, ["config", "--model-config", str(DATA / name),
                              "--gpu-memory-gib", "80", "--json"])
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr == (f"error: {DATA / name}: field 'quantization_config.quant_method': "
                          "unknown quantization method 'bitsandbytes'; see vLLM's "
                          "QUANTIZATION_METHODS (model_executor/layers/quantization) for the "
                          "30 vLLM 0.33 methods\n")


def test_the_first_dynamic_rule_that_matches_decides() -> None:
    # llama-gptq-dynamic-mixed: layer 0's o_proj is 8-bit in groups of 64 (its "+:" rule comes
    # before "-:.*self_attn\.o_proj"), layer 1's float16; down_proj channelwise, the LM head
    # 8-bit; the same rules with the skip first leave layer 0's o_proj float16 too
    name = "weights_census/quant_rules/llama-gptq-dynamic-mixed.config.json"
    assert estimate_weights_bytes(read_hf_config(_config(name), name=name), 1) == 21_119_488
    cfg = _config(name)
    rules = cfg["quantization_config"]["dynamic"]
    cfg["quantization_config"]["dynamic"] = {r"-:.*self_attn\.o_proj": {}, **rules}
    # (o_proj 1024 x 1024: 8-bit in groups of 64, 1,048,576 + 16 x 256 x 4 + 16 x 1024 x 2 B,
    # replaced by 2,097,152 B of float16)
    assert estimate_weights_bytes(read_hf_config(cfg, name=name), 1) \
        == 21_119_488 + 2_097_152 - (1_048_576 + 16_384 + 32_768)


def test_the_llama_8b_examples() -> None:
    # 16,060,522,496 B (float16, with a warning) and 30,008 blocks on 80 GiB before
    for case, weights, blocks in (("llama-3-1-8b-gptq-dynamic", 7_809_212_416, 33_943),
                                  ("llama-3-1-8b-gptq-blocks", 12_086_419_456, 31_903),
                                  ("llama-3-1-8b-ct-groups", 6_352_021_056, 34_638)):
        path = HERE / f"{case}.config.json"
        assert estimate_weights_bytes(read_hf_config(json.loads(path.read_text())), 1) == weights
        res = runner.invoke(app, ["config", "--model-config", str(path), "--gpu-memory-gib",
                                  "80", "--max-model-len", "8192", "--json"])
        assert res.exit_code == 0, res.output
        doc = json.loads(res.stdout)
        assert doc["num_blocks"] == blocks and doc["memory"]["weights_unquantised_method"] is None
        assert res.stderr == ""


@pytest.mark.parametrize(("dynamic", "why"), [
    ([r"-:.*mlp"], "must be an object of regex: overrides, got ['-:.*mlp']"),
    ({"+:(": {"bits": 8}}, ("rule '+:(' is not a regular expression (missing ), "
                            "unterminated subpattern at position 0)")),
    ({"+:.*mlp": 8}, "rule '+:.*mlp' must map to an object of overrides, got 8")])
def test_rules_vllm_cannot_read_are_refused(dynamic: object, why: str) -> None:
    cfg = _config("weights_census/int_quant/llama-gptq.config.json")
    cfg["quantization_config"]["dynamic"] = dynamic
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, name="x")
    assert e.value.field == "quantization_config.dynamic" and e.value.message == why


def test_an_ignore_entry_naming_the_experts_module_leaves_them_quantised() -> None:
    # vLLM matches the ignore list against each expert's projections
    # (model.layers.1.mlp.experts.0.gate_proj): "model.layers.1.mlp.experts" names none of them,
    # and kvcli counted layer 1's experts in bfloat16 (161,713,188 B at TP 1); a regex reaching
    # the projections leaves them unquantised
    def at_tp1(case: str) -> int:
        name = f"weights_census/quant_rules/{case}.config.json"
        return estimate_weights_bytes(read_hf_config(_config(name), name=name), 1)
    assert at_tp1("qwen3-moe-ct-ignore-experts-exact") == 111_545_380
    assert at_tp1("qwen3-moe-ct-ignore-experts-re") == 161_713_188


@pytest.mark.parametrize("listed", ["self_attn", [["q_proj"], 3]])
def test_a_block_list_that_is_not_names_is_refused(listed: object) -> None:
    cfg = _config("weights_census/int_quant/llama-gptq.config.json")
    cfg["quantization_config"]["modules_in_block_to_quantize"] = listed
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, name="x")
    assert e.value.field == "quantization_config.modules_in_block_to_quantize"
    assert e.value.message.startswith("must be a list (or a list of lists) of module names")


def test_groups_reaching_the_embedding_are_sized_without_a_warning() -> None:
    # (counted unquantised with the warning before: 46,147,584 B at TP 1 for vLLM's 16,001,156;
    # tests/test_ct_targets_census.py has the rest)
    rec = CASES[RE_ALL]["tp"]["1"][0]["param_numel_by_name"]
    assert rec["model.embed_tokens.weight_packed"] == 1024 * 1024 // 8
    assert rec["lm_head.weight_packed"] == 1024 * 1024 // 8
    res = runner.invoke(app, ["config", "--model-config", str(DATA / RE_ALL),
                              "--gpu-memory-gib", "80", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["memory"]["weights_unquantised_method"] is None
    assert round(json.loads(res.stdout)["memory"]["weights_gib"] * 2**30) == 16_001_156
    assert res.stderr == ""
