"""Quantised linears kvcli counted in the model dtype, against vLLM 0.33.0's own classes on the
meta device as an H100 builds them (tests/data/weights_census/quant2/answers.json, every rank
at TP 1, 2 and 4, and 8 for sparse MLA): Qwen3-MoE's and Qwen3-VL-MoE's router (a GateLinear
given the quant_config) under each method, with lists naming it; DeepSeek-V3.2's and GLM-5's
indexer under fp8 (its wq_b quantised, wk_weights_proj not); the Qwen2-VL / Qwen2.5-VL towers
under fp8. Each rank's bytes equal vLLM's, Qwen3-VL-MoE's tower under AWQ, GPTQ,
compressed-tensors and ModelOpt included (`kvcore.models.tower_int_quant`, `tower_modelopt`: it
was counted unquantised with the warning), and what vLLM refuses kvcli refuses in its words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.int_quant_rank import unquantised_method
from kvcore.models.mtp_draft import mtp_draft
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import built_ranks, vllms_words

HERE = Path(__file__).parent / "data" / "weights_census" / "quant2"
CASES = {n.split("/")[-1].removesuffix(".config.json"): c
         for n, c in json.loads((HERE / "answers.json").read_text())["cases"].items()}
MTP = json.loads((HERE / "mtp_answers.json").read_text())["cases"]


def _geometry(name: str):
    return read_hf_config(json.loads((HERE / f"{name}.config.json").read_text()), name=name)


def _bytes(name: str, tp: int, rank: int) -> int:
    return sum(CASES[name]["tp"][str(tp)][rank]["param_bytes_by_dtype"].values())


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES))
def test_each_rank_is_vllms_bytes(name: str, tp: int, rank: int) -> None:
    g = _geometry(name)
    assert estimate_weights_bytes(g, tp) == _bytes(name, tp, rank)
    assert unquantised_method(g) is None


REFUSED = [pytest.param(n, int(tp), ranks[0]["refused"], id=f"{n}-tp{tp}")
           for n, c in CASES.items()
           for tp, ranks in c["tp"].items() if "refused" in ranks[0]]


@pytest.mark.parametrize(("name", "tp", "refused"), REFUSED)
def test_what_vllm_refuses_is_refused_in_its_words(name: str, tp: int, refused: str) -> None:
    with pytest.raises(InputError) as e:
        g = _geometry(name)
        resolve_kv_cache_config(geometry=g, tensor_parallel_size=tp, gpu_memory_gib=4096,
                                max_model_len=1024)
    # (groups a layer's input cannot hold even whole are the checkpoint's, not the TP size's)
    assert e.value.field in ("quantization_config.group_size" if tp == 1
                             else "tensor_parallel_size", "quantization_config.ignored_layers")
    assert vllms_words(refused) in e.value.message


def test_the_census_holds_what_was_drawn() -> None:
    built = built_ranks(CASES)
    assert (len(CASES), len(built), len(REFUSED)) == (43, 279, 25)


@pytest.mark.parametrize(("name", "before"), [
    # (TP 1, counted unquantised with the warning before)
    ("qwen3-vl-moe-gptq", 7_306_891_744), ("qwen3-vl-moe-ct-w8a8", 7_306_891_744),
    ("qwen3-vl-moe-modelopt-fp8", 7_306_891_744), ("qwen3-vl-moe-modelopt-nvfp4", 7_306_891_744),
])
def test_qwen3_vl_moes_tower_is_quantised_as_vllm_builds_it(name: str, before: int) -> None:
    names = CASES[name]["tp"]["1"][0]["param_numel_by_name"]
    assert any(n.startswith("visual.blocks.") and not n.endswith((".weight", ".bias"))
               for n in names)          # (its qweight / scales: the tower is quantised)
    assert estimate_weights_bytes(_geometry(name)) == _bytes(name, 1, 0) < before


def test_qwen3_moes_router_is_quantised_unless_a_list_names_it() -> None:
    plain = CASES["qwen3-vl-moe-fp8-block"]["tp"]["1"][0]
    names = plain["param_numel_by_name"]
    # (4 layers of 128 x 2048: fp8, a 1 x 16 grid of block scales each)
    assert names["language_model.model.layers.*.mlp.gate.weight_scale_inv"] == 4 * 16
    skipped = CASES["qwen3-vl-moe-fp8-block-skip-gates"]["tp"]["1"][0]
    assert not any("gate.weight_scale" in n for n in skipped["param_numel_by_name"])
    # kvcli kept the router in bfloat16 (and matched no list naming it): before 4,282,460,640 B
    assert estimate_weights_bytes(_geometry("qwen3-vl-moe-fp8-block")) == 4_281_412_320
    assert estimate_weights_bytes(_geometry("qwen3-vl-moe-fp8-block-skip-gates")) == \
        4_281_412_320 + 4 * 128 * 2048 - 4 * 16 * 4
    assert estimate_weights_bytes(_geometry("qwen3-moe-fp8-block-skip-gates")) == 3_738_820_640


def test_the_indexers_wq_b_is_fp8_and_wk_weights_proj_is_not() -> None:
    names = CASES["deepseek-v3.2-fp8-block"]["tp"]["1"][0]["param_numel_by_name"]
    at = "model.layers.*.self_attn.indexer."
    # 61 layers: wq_b 1536 -> 64 x 128, a 64 x 12 grid of scales; wk + weights_proj 7168 wide
    assert names[at + "wq_b.weight_scale_inv"] == 61 * 64 * 12
    assert names[at + "wk_weights_proj.weight"] == 61 * 7168 * (128 + 64)
    assert not any(n.startswith(at + "wk_weights_proj.weight_scale") for n in names)
    # (kvcli counted wq_b without scales and wk_weights_proj at 1 byte: 674,002,183,520 B)
    assert estimate_weights_bytes(_geometry("deepseek-v3.2-fp8-block")) == 674_086_322_528
    assert estimate_weights_bytes(_geometry("glm-5-fp8-block"), 8) == _bytes(
        "glm-5-fp8-block", 8, 7)


def test_the_qwen2_vl_towers_are_fp8() -> None:
    names = CASES["qwen2.5-vl-7b-fp8"]["tp"]["1"][0]["param_numel_by_name"]
    # per tensor: the QKVParallelLinear three scales, gate_up two (Qwen2-VL's qkv: one)
    assert names["visual.blocks.0.attn.qkv.weight_scale"] == 3
    assert names["visual.blocks.0.mlp.gate_up_proj.weight_scale"] == 2
    assert CASES["qwen2-vl-7b-fp8"]["tp"]["1"][0]["param_numel_by_name"][
        "visual.blocks.0.attn.qkv.weight_scale"] == 1
    # (counted in bfloat16 before: 10,057,463,792 B and 10,059,045,872)
    assert estimate_weights_bytes(_geometry("qwen2-vl-7b-fp8")) == 9_383_754_232
    assert estimate_weights_bytes(_geometry("qwen2.5-vl-7b-fp8")) == 9_384_517_496


@pytest.mark.parametrize("name", ["deepseek-v3.2-fp8-block", "glm-5-fp8-block"])
def test_the_fp8_mtp_modules_indexer_as_vllms(name: str) -> None:
    """The MTP module's layer keeps an indexer (mtp_answers.json, record_quant2_mtp.py): its
    wq_b fp8 with block scales, wk_weights_proj in bf16 (kvcli's count was 1,379,328 B short
    for DeepSeek-V3.2, 985,088 for GLM-5)."""
    rec = MTP[name]
    assert rec["quantization"]["draft"] == "fp8"
    own = rec["after_load_sharing"]["param_bytes_by_dtype_not_the_targets"]
    assert mtp_draft(_geometry(name)).weights_bytes() == sum(own.values())
    assert sum(rec["target"]["param_bytes_by_dtype"].values()) == _bytes(name, 1, 0)
