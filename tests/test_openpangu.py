"""openPangu Ultra MoE (`PanguUltraMoEForCausalLM`, model_type pangu_ultra_moe) against vLLM
0.33.0's openpangu.py built on the meta device at TP 1, 2, 4 and 8, every rank
(tests/data/weights_census/openpangu/answers.json, recorded by record_openpangu.py there): the
bytes a rank holds and its buffers, exactly. kvcli refused the model type before ("a
multi-head latent attention variant kvcli does not model"): its layers are DeepSeek-V3's, with
sandwich norms and the router's bias under a key of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.mtp_draft import mtp_draft
from kvcore.models.weights import estimate_params, estimate_weights_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import assert_rank_equal, built_ranks, case_geometry, check_ranks_agree
from tests.kv_census_rows import kvcli_specs, same, vllm_specs

DATA = Path(__file__).parent / "data" / "weights_census" / "openpangu"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES))
def test_bytes_and_buffers_per_rank_equal_vllms(name: str, tp: int, rank: int) -> None:
    assert_rank_equal(case_geometry(DATA, CASES, name), tp, CASES[name]["tp"][str(tp)][rank])


def test_the_census_covers_every_config() -> None:
    assert set(CASES) == {p.name.removesuffix(".config.json") for p in DATA.glob("*.config.json")}
    assert len(built_ranks(CASES)) == 50
    check_ranks_agree(CASES)


def test_sandwich_norms_and_the_routers_bias() -> None:
    """Two hidden-wide norms a layer more (pre_mlp_layernorm, post_mlp_layernorm) and a float32
    bias an expert beside each MoE router (router_enable_expert_bias): 3 layers x 2 x 64 and 2
    MoE layers x 4 experts on the tiny config."""
    plain = case_geometry(DATA, CASES, "tiny-pangu-ultra-moe-plain")
    full = case_geometry(DATA, CASES, "tiny-pangu-ultra-moe")
    assert (full.sandwich_norms, full.router_score_bias) == (True, True)
    assert estimate_params(full)[0] - estimate_params(plain)[0] == 3 * 2 * 64 + 2 * 4
    rec = CASES["openpangu-ultra-moe-718b"]["tp"]["1"][0]
    assert estimate_params(case_geometry(DATA, CASES, "openpangu-ultra-moe-718b")) == (
        rec["param_numel"], 0)


def test_tp_8_on_four_heads_is_refused_its_mtp_module_built() -> None:
    g = case_geometry(DATA, CASES, "tiny-pangu-ultra-moe")
    assert CASES["tiny-pangu-ultra-moe"]["tp"]["8"][0]["refused"] == (
        "ValueError: num_heads 4 is not divisible by tp_size 8.")
    assert g.mla is not None and g.layer_kinds == ("mla",) * 3
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=g, tensor_parallel_size=8, gpu_memory_gib=80,
                                max_model_len=4096)
    assert str(e.value) == ("field 'tensor_parallel_size': tiny-pangu-ultra-moe's 4 attention "
                            "heads must be divisible by it, as vLLM requires; got 8")
    # (its MTP module is modelled since: tests/test_mtp3.py)
    assert mtp_draft(read_hf_config(json.loads(
        (DATA / "openpangu-ultra-moe-718b.config.json").read_text()))).architecture \
        == "OpenPanguMTP"


def test_moe_layer_freq_is_not_read() -> None:
    """openpangu.py makes every layer from first_k_dense_replace on MoE: a moe_layer_freq of 2
    (which DeepSeek's deepseek_v2.py honours) leaves layers 1-4 all MoE (kvcli made 1 and 3
    dense: 8,651,200 B at TP 1 for vLLM's 8,676,832)."""
    g = case_geometry(DATA, CASES, "tiny-pangu-ultra-moe-layer-freq")
    assert g.moe_layers == (False, True, True, True, True)
    assert estimate_weights_bytes(g, 1) == 8_676_832 == sum(
        CASES["tiny-pangu-ultra-moe-layer-freq"]["tp"]["1"][0]["param_bytes_by_dtype"].values())


@pytest.mark.parametrize("name", ["tiny-pangu-ultra-moe", "openpangu-ultra-moe-718b"])
def test_kv_specs_equal_vllms(name: str) -> None:
    """vLLM's MLA spec a layer (kv_specs.json, record_openpangu_specs.py: the 718B's 61 layers,
    576-wide latent, 18,432 B a page of 16 in bf16) at vLLM's max_model_len."""
    row = json.loads((DATA / "kv_specs.json").read_text())["rows"][name]
    assert row["use_mla"] and len(row["specs"]) == row["config"]["num_hidden_layers"]
    assert same(vllm_specs(row), kvcli_specs(row, "PanguUltraMoEForCausalLM"))
