"""AWQ and GPTQ checkpoints against vLLM 0.33.0's own model classes on the meta device, as an
H100 builds them (tests/data/weights_census/int_quant/answers.json: Llama, Llama-3.1-8B, Qwen3,
Qwen3-MoE, Mixtral, and the hybrids Qwen3.5, Nemotron-H and Jamba, at TP 1, 2, 4 and 8, every
rank; and compressed-tensors' W4A16, W8A16, W8A8 int8 and fp8): the bytes a rank holds (`kvcore.models.int_quant`), vLLM's refusals word for word, and
the warning where kvcli counts a method's weights unquantised."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import built_ranks, vllms_words

DATA = Path(__file__).parent / "data"
HERE = DATA / "weights_census" / "int_quant"
CASES = json.loads((HERE / "answers.json").read_text())["cases"]
runner = CliRunner()


def _config(name: str) -> dict:
    return json.loads((DATA / name).read_text())


BUILT = built_ranks(CASES, label=lambda n: n.split("/")[-1])
# (refused before any rank is built: the quantization_config itself, or a fused linear's shards)
AT_EVERY_TP = [pytest.param(n, c["tp"]["1"][0]["refused"], id=n.split("/")[-1])
               for n, c in CASES.items() if "refused" in c["tp"]["1"][0]]
AT_SOME_TP = [pytest.param(n, int(tp), c["tp"][tp][0]["refused"], id=f"{n.split('/')[-1]}-tp{tp}")
              for n, c in CASES.items() for tp in c["tp"] if tp != "1"
              and "refused" in c["tp"][tp][0] and "refused" not in c["tp"]["1"][0]]


@pytest.mark.parametrize(("name", "tp", "rank"), BUILT)
def test_bytes_per_rank_equal_vllms(name: str, tp: int, rank: int) -> None:
    rec = CASES[name]["tp"][str(tp)][rank]
    g = read_hf_config(_config(name), name=name)
    assert estimate_weights_bytes(g, tp) == sum(rec["param_bytes_by_dtype"].values())


@pytest.mark.parametrize(("name", "refused"), AT_EVERY_TP)
def test_a_config_vllm_refuses_is_refused_with_its_words(name: str, refused: str) -> None:
    with pytest.raises(InputError) as e:
        read_hf_config(_config(name), name=name)
    assert e.value.message.endswith(f'"{vllms_words(refused)}"')
    assert e.value.field.startswith("quantization_config.")


@pytest.mark.parametrize(("name", "tp", "refused"), AT_SOME_TP)
def test_a_tp_vllm_refuses_is_refused_naming_the_option(name: str, tp: int, refused: str) -> None:
    g = read_hf_config(_config(name), name=name)
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=g, tensor_parallel_size=tp, gpu_memory_gib=80,
                                max_model_len=4096)
    assert e.value.field == "tensor_parallel_size"
    assert vllms_words(refused) in e.value.message


def test_the_census_draws_each_refusal() -> None:
    words = sorted({vllms_words(p.values[-1])[:30] for p in AT_EVERY_TP + AT_SOME_TP})
    assert words == ["CompressedTensors WNA16 MoE wi", "Detected some but not all shar", "GPTQ group activation ordering",
                     "Marlin does not support group_", "Tensor parallel size 8 is grea",
                     "The input size is not aligned ", "Unsupported FusedMoe scheme",
                     "Unsupported num_bits = 8. Supp",
                     "Unsupported quantization confi", "Weight input_size_per_partitio"]


def test_what_vllm_packs_in_a_qwen3_moe_layer() -> None:
    # the router is a GateLinear built with the quant_config (qwen3_moe.py): packed, 4 experts
    # wide, so AWQ's qweight holds 4 // 8 = 0 columns; GPTQ's experts hold two bias tensors
    awq = CASES["weights_census/int_quant/qwen3-moe-awq.config.json"]["tp"]["1"][0]
    gptq = CASES["weights_census/int_quant/qwen3-moe-gptq.config.json"]["tp"]["1"][0]
    assert awq["param_numel_by_name"]["model.layers.*.mlp.gate.qweight"] == 0
    assert awq["param_numel_by_name"]["model.layers.*.mlp.gate.scales"] == 2 * 8 * 4
    assert gptq["param_numel_by_name"]["model.layers.*.mlp.experts.routed_experts.w2_bias"] \
        == 2 * 4 * 1024


def test_the_llama_8b_awq_example() -> None:
    # 14.96 GiB (16,060,522,496 B, float16) before: the 4-bit checkpoint holds 5,727,854,592 B
    g = read_hf_config(_config("weights_census/int_quant/llama-3-1-8b-awq.config.json"))
    assert estimate_weights_bytes(g, 1) == 5_727_854_592
    res = runner.invoke(app, ["config", "--model-config",
                              str(HERE / "llama-3-1-8b-awq.config.json"), "--gpu-memory-gib", "80",
                              "--max-model-len", "8192", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["num_blocks"] == 34_935 and doc["memory"]["weights_unquantised_method"] is None
    assert res.stderr == ""


def _unmodelled(tmp_path: Path) -> Path:
    cfg = _config("weights_census/int_quant/llama-awq.config.json")
    cfg["quantization_config"] = {"quant_method": "quark"}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    return tmp_path / "config.json"


def test_config_says_it_counts_an_unmodelled_method_unquantised(tmp_path: Path) -> None:
    res = runner.invoke(app, ["config", "--model-config", str(_unmodelled(tmp_path)),
                              "--gpu-memory-gib", "80", "--json"])
    assert res.exit_code == 0, res.output
    line = ("warning: llama's weights are counted unquantised, in float16: kvcli does not model "
            "quant_method quark's weight sizes, so the KV memory is understated: "
            "give the weights' known size (--weights-gib), or --num-blocks, or --gpu-memory-gib "
            "less the difference\n")
    assert res.stderr == line
    doc = json.loads(res.stdout)
    assert doc["memory"]["weights_unquantised_method"] == "quark"
    assert doc["warnings"] == [line.removeprefix("warning: ").rstrip("\n")]
    # (given the weights, nothing is estimated and nothing said)
    res = runner.invoke(app, ["config", "--model-config", str(_unmodelled(tmp_path)),
                              "--gpu-memory-gib", "80", "--weights-gib", "3", "--json"])
    assert res.stderr == "" and json.loads(res.stdout)["memory"]["weights_unquantised_method"] \
        is None


def test_replay_says_it_too(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 100, "output_length": 5}\n')
    res = runner.invoke(app, ["replay", str(trace), "--model-config", str(_unmodelled(tmp_path)),
                              "--gpu-memory-gib", "80", "--max-model-len", "4096"])
    assert res.exit_code == 0, res.output
    assert ("warning: llama's weights are counted unquantised, in float16: kvcli does not model "
            "quant_method quark's weight sizes, so the KV memory is understated: "
            "give num_blocks, or gpu_memory_gib less the difference\n") in res.stderr
    res = runner.invoke(app, ["replay", str(trace), "--model-config", str(_unmodelled(tmp_path)),
                              "--num-blocks", "400", "--max-model-len", "4096"])
    assert "unquantised" not in res.stderr


@pytest.mark.parametrize("command", ["config", "replay"])
def test_the_cli_refuses_a_tp_in_one_line(command: str) -> None:
    trace = [str(DATA.parent.parent / "traces" / "multiturn-chat.jsonl")] if command == "replay" else []
    res = runner.invoke(app, [command, *trace, "--model-config",
                              str(HERE / "llama-awq-narrow.config.json"), "--tp", "8",
                              "--gpu-memory-gib", "80"])
    assert res.exit_code == 2, res.output
    assert res.stdout == "" and "Traceback" not in res.stderr
    flag = "--tensor-parallel-size"      # (replay named it --tp, config by vLLM's name)
    assert res.stderr == (
        f"error: option {flag}: llama's AWQ groups of 128 do not split over it (layer 0's "
        "down_proj), and vLLM refuses to build it: \"The input size is not aligned with the "
        "quantized weight shape. This can be caused by too large tensor parallel size.\"; got 8\n")


def test_a_key_vllm_needs_is_refused_with_its_words() -> None:
    cfg = _config("weights_census/int_quant/llama-gptq.config.json")
    del cfg["quantization_config"]["sym"]
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="c.json")
    assert (e.value.field, e.value.message) == (
        "quantization_config.sym", ("missing, and vLLM refuses to build it: \"Cannot find any "
                                    "of ['sym'] in the model's quantization config.\""))


def test_compressed_tensors_int_experts_are_sized() -> None:
    # (WNA16 and int8 experts, built with no MoE backend chosen: sized, nothing said; int8
    # experts with tensor-wise weights under dynamic inputs trip vLLM's assert)
    from kvcore.models.int_quant_rank import unquantised_method

    cfg = _config("weights_census/int_quant/qwen3-moe-ct-fp8-dynamic.config.json")
    assert unquantised_method(read_hf_config(cfg)) is None
    w4 = _config("weights_census/int_quant/llama-ct-w4a16.config.json")["quantization_config"]
    assert unquantised_method(read_hf_config({**cfg, "quantization_config": w4})) is None
    int8 = _config("weights_census/int_quant/llama-ct-w8a8-int8.config.json")[
        "quantization_config"]
    weights = int8["config_groups"]["group_0"]["weights"]
    tensor = {**int8, "config_groups": {"group_0": {**int8["config_groups"]["group_0"],
                                                    "weights": {**weights, "strategy": "tensor"}}}}
    with pytest.raises(InputError) as e:
        read_hf_config({**cfg, "quantization_config": tensor})
    assert e.value.message == ("int8 experts with tensor-wise weights and dynamic inputs, and "
                               "vLLM refuses to build them: \"AssertionError\"")


def test_what_compressed_tensors_adds_to_an_attention_layer() -> None:
    # CompressedTensorsKVCacheMethod: k/v/q scales (float32) and zero points (float16), one
    # each, beside W4A16's weight_shape (int64 [2]) a linear
    rec = CASES["weights_census/int_quant/llama-ct-w4a16.config.json"]["tp"]["1"][0]
    assert rec["param_bytes_by_dtype"]["float32"] == 2 * 3 * 4
    assert rec["param_bytes_by_dtype"]["int64"] == 2 * 4 * 16
    # (its group scales are as many as AWQ's: the rest of the float16 is the same model)
    awq = CASES["weights_census/int_quant/llama-awq.config.json"]["tp"]["1"][0]
    assert rec["param_bytes_by_dtype"]["float16"] == awq["param_bytes_by_dtype"]["float16"] + 2 * 3 * 2


def test_experts_marlin_cannot_take_fall_back_to_moe_wna16() -> None:
    # 768 wide: 384 a rank at TP 2 (whole groups of 128: Marlin, int32), 192 at TP 4 (not:
    # MoeWNA16, uint8, its groups halved to 64)
    tps = CASES["weights_census/int_quant/qwen3-moe-awq-narrow.config.json"]["tp"]
    assert "uint8" not in tps["2"][0]["param_bytes_by_dtype"]
    assert tps["4"][0]["param_bytes_by_dtype"]["uint8"] == 4_792_320
