"""LongCat-Flash (`longcat_flash`) against vLLM 0.33.0's own class on the meta device
(tests/data/weights_census/longcat/answers.json, every rank at TP 1, 2, 4 and 8): two MLA
attentions, four norms and two dense MLPs a decoder layer, a MoE whose float32 router spans
the zero-computation experts too, an LM head of its own; weights and buffers equal on every
rank. Its KV caches (2 x num_layers MLA layers) are the KV-spec census's
(tests/test_kv_spec_census.py), perf.py's counts perf_configs/d2-longcat_flash
(tests/test_vllm_count.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.mtp_draft import mtp_draft
from kvcore.models.weights import estimate_weights_bytes
from tests.census_rows import assert_rank_equal, built_ranks, case_geometry

HERE = Path(__file__).parent / "data" / "weights_census" / "longcat"
CASES = {n.split("/")[-1].removesuffix(".config.json"): c
         for n, c in json.loads((HERE / "answers.json").read_text())["cases"].items()}
BUILT = {n: c for n, c in CASES.items() if "refused" not in c["tp"]["1"][0]}


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(BUILT))
def test_each_rank_is_vllms_bytes(name: str, tp: int, rank: int) -> None:
    assert_rank_equal(case_geometry(HERE, CASES, name), tp, CASES[name]["tp"][str(tp)][rank])


def test_the_census_holds_what_was_drawn() -> None:
    assert (len(CASES), len(built_ranks(BUILT))) == (3, 30)
    # (vLLM's ModelConfig reads num_layers decoder layers; the KV cache and perf.py twice as
    # many attentions)
    assert {n: c["total_num_hidden_layers"] for n, c in BUILT.items()} == {
        "longcat-flash-l2": 2, "longcat-flash-other": 2}
    g = case_geometry(HERE, CASES, "longcat-flash-other")
    assert (len(g.layer_kinds), g.mla is not None, g.num_experts, g.zero_experts) == (
        4, True, 64, 32)
    # (TP 2 of the published shapes at 2 layers: 41,623,357,440 B, 37,754,880 of them float32)
    assert sum(CASES["longcat-flash-l2"]["tp"]["2"][0]["param_bytes_by_dtype"].values()) == (
        41_623_357_440)


def test_a_config_without_the_keys_vllm_reads_is_refused_as_vllm_fails() -> None:
    assert "zero_expert_type" in CASES["longcat-flash-no-zero-type"]["tp"]["1"][0]["refused"]
    with pytest.raises(InputError) as e:
        case_geometry(HERE, CASES, "longcat-flash-no-zero-type")
    assert e.value.field == "zero_expert_type"


def _config(**extra) -> dict:
    return {**json.loads((HERE / "longcat-flash-l2.config.json").read_text()), **extra}


def test_what_kvcli_does_not_model_is_refused_by_name() -> None:
    quantised = read_hf_config(_config(quantization_config={
        "quant_method": "fp8", "activation_scheme": "dynamic"}), name="lc")
    with pytest.raises(InputError) as e:
        estimate_weights_bytes(quantised, 1)
    assert "a quantised LongCat-Flash checkpoint's weights" in e.value.message
    g = read_hf_config(_config(), name="lc")
    # (its MTP module and pipeline stages are modelled since: tests/test_mtp3.py,
    # tests/test_longcat_pp.py)
    assert mtp_draft(g).architecture == "LongCatFlashMTP"
