"""kvcli's weights and buffers estimates of Gemma 3n's and Gemma 4's text models against vLLM
0.33's classes built on the meta device at TP 1, 2, 4 and 8, every rank
(tests/data/weights_gemma/answers.json, recorded by record_weights.py there): the bytes a rank
holds, exactly (per-layer embeddings, AltUp, LAuReL, KV-shared layers' query-only attention,
Gemma 4's per-layer head sizes and MoE blocks; Gemma 3n's AltUp scales in float32), and its buffers (a RoPE
cache per layer type and head size, Gemma 4's proportional one the whole head wide)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import WHOLE, estimate_params, estimate_weights_bytes
from kvcore.sizing.buffers_term import buffer_bytes
from tests.census_rows import built_ranks

CASES = json.loads((Path(__file__).parent / "data" / "weights_gemma" / "answers.json")
                   .read_text())["cases"]


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES))
def test_weights_and_buffers_per_rank_equal_vllms(name: str, tp: int, rank: int) -> None:
    rec = CASES[name]["tp"][str(tp)][rank]
    g = read_hf_config(CASES[name]["config"])
    assert estimate_weights_bytes(g, tp) == sum(rec["param_bytes_by_dtype"].values())
    assert buffer_bytes(g, tp, None, 4096) == sum(
        v for by_dtype in rec["buffer_bytes_by_dtype"].values() for v in by_dtype.values())


def test_every_case_built_and_counted() -> None:
    assert len(built_ranks(CASES)) == 8 * 15
    for case in CASES.values():
        assert estimate_params(read_hf_config(case["config"]))[0] == \
            case["tp"]["1"][0]["param_numel"]


def test_the_recorded_numbers() -> None:
    """E4B: 6,835,235,568 parameters at TP 1 (its 2,348,810,240 per-layer embeddings among
    them), 71,680 of them float32 (AltUp's output scales, 2,048 a layer)."""
    rec = CASES["gemma3n-e4b"]["tp"]["1"][0]
    assert rec["param_numel"] == 6_835_235_568
    assert rec["param_bytes_by_dtype"]["float32"] == 35 * 2048 * 4
    assert rec["param_numel_by_name"]["model.self_decoder.embed_tokens_per_layer.weight"] == \
        262_144 * 35 * 256
    # Gemma 4's MoE blocks: 128 experts of 3 x 2,304 x 704 a layer, split by TP
    moe = CASES["gemma4-moe"]["tp"]["8"][0]["param_numel_by_name"]
    assert moe["model.layers.*.experts.routed_experts.w13_weight"] == 30 * 128 * 2 * 2304 * 704 // 8


def test_a_quantised_checkpoint_asks_for_the_weights() -> None:
    g = read_hf_config({"architectures": ["Gemma4ForCausalLM"], "model_type": "gemma4_text",
                        "quantization_config": {"quant_method": "fp8"}})
    with pytest.raises(InputError) as e:
        estimate_weights_bytes(g)
    assert e.value.field == "weights_gib" and "quantised" in str(e.value)


def test_pipeline_stages_ask_for_the_weights() -> None:
    g = read_hf_config(CASES["gemma4-default"]["config"])
    assert estimate_weights_bytes(g, 1, WHOLE) > 0
    with pytest.raises(InputError) as e:
        estimate_weights_bytes(g, 1, (range(15), True, False))
    assert e.value.field == "weights_gib" and "pipeline stages" in str(e.value)
