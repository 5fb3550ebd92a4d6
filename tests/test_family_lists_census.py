"""Lists naming the families' own modules (fp8's ignored_layers, AWQ's modules_to_not_convert,
GPTQ's dynamic rules, compressed-tensors' ignore, ModelOpt's exclude) against vLLM 0.33.0's
builds on the meta device as an H100 makes them (tests/data/weights_census/family_lists/
answers.json, TP 1, 2 and 4, every rank): LFM2's and LFM2-MoE's short_conv (the checkpoint's
conv, renamed by vLLM's mapper), w13 / w2, routed experts and router, DBRX's
norm_attn_norm.attn and ffn, and the pre-Llama decoders' fp8 lists (GPT-2, GPT-J, Bloom, OPT,
Falcon, ChatGLM3; GPT-NeoX, Phi-2, StarCoder, StarCoder2 by the Transformers backend's)
matched at vLLM's paths, each rank's bytes equal; half of a fused linear refused in vLLM's words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.int_quant_rank import unquantised_method
from kvcore.models.weights import estimate_weights_bytes
from tests.census_rows import built_ranks, vllms_words

HERE = Path(__file__).parent / "data" / "weights_census" / "family_lists"
CASES = {n.split("/")[-1].removesuffix(".config.json"): c
         for n, c in json.loads((HERE / "answers.json").read_text())["cases"].items()}
REFUSED = sorted(n for n, c in CASES.items() if "refused" in c["tp"]["1"][0])


def _read(name: str):
    return read_hf_config(json.loads((HERE / f"{name}.config.json").read_text()), name=name)


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES))
def test_each_rank_is_vllms_bytes(name: str, tp: int, rank: int) -> None:
    g = _read(name)
    rec = CASES[name]["tp"][str(tp)][rank]
    assert estimate_weights_bytes(g, tp) == sum(rec["param_bytes_by_dtype"].values())
    assert unquantised_method(g) is None


@pytest.mark.parametrize("name", REFUSED)
def test_half_a_fused_linear_is_refused_in_vllms_words(name: str) -> None:
    with pytest.raises(InputError) as e:
        _read(name)
    assert e.value.field == "quantization_config.ignored_layers"
    assert vllms_words(CASES[name]["tp"]["1"][0]["refused"]) in e.value.message


def test_the_census_holds_what_was_drawn() -> None:
    assert (len(CASES), len(built_ranks(CASES))) == (47, 288)
    assert REFUSED == ["lfm2-fp8-skip-half-w13", "lfm2-moe-fp8-skip-half-w13",
                       "opt-half-qkv-fp8-skip-own", "phi-half-qkv-fp8-skip-own",
                       "starcoder2-half-qkv-fp8-skip-own"]


def test_the_pre_llama_lists_name_vllms_modules() -> None:
    # (OPT: the checkpoint's decoder.layers.0 q/k/v_proj renamed and fused into qkv_proj,
    # fc1 and project_in: 7,864,320 parameters in bfloat16, 5 scales fewer; GPT-J's q/k/v
    # name nothing, gpt_j.py has no packed_modules_mapping: only fc_in)
    def more(name: str, plain: str) -> int:
        return estimate_weights_bytes(_read(name), 1) - estimate_weights_bytes(
            read_hf_config(json.loads((HERE.parent / "families" / f"{plain}.config.json")
                                      .read_text()), name=plain), 1)
    assert more("opt-fp8-skip-own", "opt-fp8") == 7_864_320 - 5 * 4
    assert more("gpt-j-fp8-skip-own", "gpt-j-fp8") == 4096 * 16384 - 4


def test_the_checkpoints_conv_is_vllms_short_conv() -> None:
    # (fp8: layer 0's in_proj (3 x 1024 x 1024) and layer 2's out_proj (1024 x 1024) in
    # bfloat16, less their fp8 bytes and a scale a shard: 4,194,288 B more than lfm2-fp8)
    assert estimate_weights_bytes(_read("lfm2-fp8-skip-conv-hf"), 1) == sum(
        CASES["lfm2-fp8-skip-conv-hf"]["tp"]["1"][0]["param_bytes_by_dtype"].values())
    assert _read("lfm2-fp8-skip-conv-hf").fp8_ignored == (
        "model.layers.0.short_conv.in_proj", "model.layers.2.short_conv.out_proj")


def test_the_transformers_backends_lists_are_renamed_to_its_model() -> None:
    # (the checkpoint's gpt_neox. and transformer. prefixes and none at all become model.;
    # Phi's q/k/v_proj one by one name its fused qkv_proj)
    assert _read("gpt-neox-fp8-skip-own").fp8_ignored == (
        "model.layers.0.attention.dense", "model.layers.1.mlp.dense_h_to_4h",
        "model.layers.1.attention.query_key_value")
    assert _read("starcoder-fp8-skip-own").fp8_ignored == (
        "model.h.0.attn.c_attn", "model.h.1.mlp.c_proj", "model.h.1.attn.c_proj")
    rec = CASES["phi-fp8-skip-own"]["tp"]["1"][0]
    assert rec["param_numel_by_name"]["model.layers.*.self_attn.qkv_proj.weight_scale"] == 3
    assert estimate_weights_bytes(_read("phi-fp8-skip-own"), 1) == 734_126_124 == sum(
        rec["param_bytes_by_dtype"].values())
