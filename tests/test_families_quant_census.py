"""Quantised checkpoints of Gemma 3n / Gemma 4, LFM2 / LFM2-MoE, Mamba 1 / 2, Nemotron-H, DBRX
and the pre-Llama decoders against vLLM 0.33.0's own classes on the meta device, as an H100
builds them (tests/data/weights_census/families/answers.json: fp8 per tensor, block and with
ignored_layers, AWQ, GPTQ and its dynamic rules, compressed-tensors W8A8 / W4A16 and an ignore
list, ModelOpt FP8 / NVFP4, at TP 1, 2 and 4, every rank): each rank's bytes equal vLLM's
where kvcli sizes the checkpoint, and refused by name, the measured size asked for, where it
does not (`kvcore.models.quant_unsized`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.int_quant_rank import unquantised_method
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import built_ranks, vllms_words

HERE = Path(__file__).parent / "data" / "weights_census" / "families"
CASES = {n.split("/")[-1].removesuffix(".config.json"): c
         for n, c in json.loads((HERE / "answers.json").read_text())["cases"].items()}
CLASSIC = ("gpt2", "gpt-j", "starcoder", "bloom", "gpt-neox", "opt", "falcon", "phi", "chatglm")
BACKEND = ("gpt-neox", "phi", "starcoder")   # (served by the Transformers backend)
runner = CliRunner()


def _config(name: str) -> dict:
    return json.loads((HERE / f"{name}.config.json").read_text())


def _refused_by_kvcli(name: str) -> bool:
    """What kvcli does not size, by family and method (README.md here)."""
    family, method = next((f, name[len(f) + 1:]) for f in sorted(
        (*CLASSIC, "gemma3n", "gemma4", "gemma4-moe", "lfm2", "lfm2-moe", "mamba1", "mamba2",
         "nemotron-h", "dbrx"), key=len, reverse=True) if name.startswith(f + "-"))
    if family.startswith(("gemma", "mamba")):
        return True
    if family in CLASSIC:
        # (every method and list at vLLM's paths: its own files', the Transformers backend's)
        return False
    if family == "dbrx":
        return method.startswith("ct-")
    return False    # (LFM2's lists too: tests/test_family_lists_census.py draws more)


BUILT = built_ranks(CASES)
AT_SOME_TP = [pytest.param(n, int(tp), c["tp"][tp][0]["refused"], id=f"{n}-tp{tp}")
              for n, c in CASES.items() if not _refused_by_kvcli(n)
              and "refused" not in c["tp"]["1"][0]
              for tp in c["tp"] if "refused" in c["tp"][tp][0]]


@pytest.mark.parametrize(("name", "tp", "rank"), BUILT)
def test_each_rank_is_vllms_bytes_or_refused_by_name(name: str, tp: int, rank: int) -> None:
    want = sum(CASES[name]["tp"][str(tp)][rank]["param_bytes_by_dtype"].values())
    try:
        g = read_hf_config(_config(name), name=name)
    except InputError as e:
        # (a quantised Mamba: refused as it is read, `kvcore.models.mamba_only`)
        assert name.startswith("mamba") and e.field == "quantization_config"
        return
    if not _refused_by_kvcli(name):
        if "-ct-" in name and name.startswith(BACKEND):
            # (the backend casts parameters left on the meta device to the model dtype: the
            # attention's 3 k/v/q scales, float32 on a real device; ../quant_old/README.md)
            want += 2 * 3 * (4 - 2)
        assert estimate_weights_bytes(g, tp) == want
        assert unquantised_method(g) is None
        return
    with pytest.raises(InputError) as e:
        estimate_weights_bytes(g, tp)
    assert e.value.field == "weights_gib"
    assert e.value.message.endswith("give the weights' measured size")


@pytest.mark.parametrize(("name", "tp", "refused"), AT_SOME_TP)
def test_a_tp_vllm_refuses_is_refused_naming_the_option(name: str, tp: int, refused: str) -> None:
    g = read_hf_config(_config(name), name=name)
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=g, tensor_parallel_size=tp, gpu_memory_gib=80,
                                max_model_len=1024)
    assert e.value.field == "tensor_parallel_size"
    if refused.startswith("ValueError"):
        # (vLLM's words, the layer named by vLLM's path, "transformer.encoder.layers.0.mlp.
        # dense_4h_to_h", where kvcli names its own: "layer 0's down_proj")
        assert vllms_words(refused).split("' ")[-1] in e.value.message


def test_the_census_draws_what_kvcli_sizes_and_what_it_refuses() -> None:
    sized = [n for n in CASES if not _refused_by_kvcli(n)]
    assert (len(CASES), len(sized), len(BUILT)) == (216, 153, 1337)
    assert sum(1 for n, _, _ in (p.values for p in BUILT) if not _refused_by_kvcli(n)) == 951
    # (vLLM itself cannot build Gemma 3n under AWQ / GPTQ: its AltUp router is a
    # ReplicatedLinear whose packed weight the model reads as .weight)
    assert CASES["gemma3n-awq"]["tp"]["1"][0]["refused"] == (
        "AttributeError: 'ReplicatedLinear' object has no attribute 'weight'")


def test_the_scales_kvcli_did_not_count() -> None:
    # fp8 per tensor: a float32 weight scale a shard (Bloom's QKV three, its dense, MLP up and
    # down one each) and four q/k/v/prob scales in bfloat16, a layer; LFM2's attention none
    bloom = CASES["bloom-fp8"]["tp"]["1"][0]
    assert bloom["param_numel_by_name"]["transformer.h.0.self_attention.query_key_value."
                                        "weight_scale"] == 3
    g = read_hf_config(_config("bloom-fp8"))
    assert estimate_weights_bytes(g) == 539_029_504 + 2 * (6 * 4 + 4 * 2)
    lfm2 = CASES["lfm2-moe-fp8"]["tp"]["1"][0]["param_numel_by_name"]
    assert not any("k_scale" in n for n in lfm2)
    # (LFM2-MoE's router, a GateLinear given the quant_config: fp8, one scale)
    assert lfm2["model.layers.*.feed_forward.gate.weight_scale"] == 3


def test_the_cli_refuses_an_unsized_checkpoint_in_one_line() -> None:
    path = str(HERE / "dbrx-ct-w4a16.config.json")
    res = runner.invoke(app, ["config", "--model-config", path, "--gpu-memory-gib", "80"])
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr == ("error: option --weights-gib: dbrx: kvcli does not estimate dbrx's "
                          "weights in a quantised (compressed-tensors) checkpoint: give the "
                          "weights' measured size\n")
    res = runner.invoke(app, ["config", "--model-config", path,
                              "--gpu-memory-gib", "80", "--weights-gib", "0.1"])
    assert res.exit_code == 0, res.output


def test_groups_a_model_width_cannot_hold_are_the_checkpoints_refusal_not_the_options() -> None:
    """Falcon-7B's 4,544-wide input is not whole groups of 128 even on one rank: vLLM refuses
    its AWQ build at TP 1 (the census's falcon-awq), and kvcli names the checkpoint's group
    size, not --tensor-parallel-size with "got 1"."""
    assert "refused" in CASES["falcon-awq"]["tp"]["1"][0]
    path = str(HERE / "falcon-awq.config.json")
    res = runner.invoke(app, ["config", "--model-config", path, "--gpu-memory-gib", "80"])
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr == (
        f"error: {path}: field 'quantization_config.group_size': falcon's AWQ groups of 128 do "
        "not divide the input even on one rank (layer 0's query_key_value), and vLLM refuses to "
        "build it: \"The input size is not aligned with the quantized weight shape. This can be "
        "caused by too large tensor parallel size.\"\n")
