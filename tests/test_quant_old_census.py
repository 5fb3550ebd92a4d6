"""AWQ, GPTQ, compressed-tensors and ModelOpt checkpoints of the classes vLLM 0.33 serves through
its Transformers backend (GPT-NeoX-20B, Phi-2, StarCoder, StarCoder2-3B / -15B, 2 layers) with
lists naming modules as the checkpoints do, against vLLM's builds at TP 1, 2, 4 and 8, every
rank (tests/data/weights_census/quant_old/answers.json): each rank's bytes vLLM's, and vLLM's
refusal of Phi-2's 320-wide shards at TP 8 in its words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.int_quant_rank import unquantised_method
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import built_ranks, refused_tps

HERE = Path(__file__).parent / "data" / "weights_census" / "quant_old"
CASES = {n.split("/")[-1].removesuffix(".config.json"): c
         for n, c in json.loads((HERE / "answers.json").read_text())["cases"].items()}
BUILT = built_ranks(CASES)
REFUSED = refused_tps(CASES)


def _geometry(name: str):
    return read_hf_config(json.loads((HERE / f"{name}.config.json").read_text()), name=name)


@pytest.mark.parametrize(("name", "tp", "rank"), BUILT)
def test_each_rank_is_vllms_bytes(name: str, tp: int, rank: int) -> None:
    want = sum(CASES[name]["tp"][str(tp)][rank]["param_bytes_by_dtype"].values())
    if "-ct-" in name:
        # (recorded on the meta device, where the backend casts the attention's 3 k/v/q scales
        # to the model dtype; float32 on a real device: real_device.json, README.md)
        want += 2 * 3 * (4 - 2)
    g = _geometry(name)
    assert estimate_weights_bytes(g, tp) == want
    assert unquantised_method(g) is None


@pytest.mark.parametrize(("name", "tp"), REFUSED)
def test_a_tp_vllm_refuses_is_refused_in_its_words(name: str, tp: int) -> None:
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=_geometry(name), tensor_parallel_size=tp,
                                gpu_memory_gib=80, max_model_len=1024)
    assert e.value.field == "tensor_parallel_size"
    # (vLLM's words whole, its path in them too: the first row-parallel dense it cannot split)
    words = CASES[name]["tp"][str(tp)][0]["refused"].removeprefix("ValueError: ")
    assert f'vLLM refuses to build it: "{words}"; got 8' in e.value.message
    layer = 1 if "ignore" in name else 0     # (layer 0's dense listed in the ignore list)
    assert f"(layer {layer}'s dense)" in e.value.message


def test_the_census_counts_and_examples() -> None:
    assert (len(CASES), len(BUILT), [p.values[:2] for p in REFUSED]) == (50, 726, [
        ("phi-2-awq", 8), ("phi-2-ct-w4a16-ignore", 8), ("phi-2-ct-w4a16", 8)])
    assert "not aligned with the quantized weight shape" in CASES["phi-2-awq"]["tp"]["8"][0][
        "refused"]
    # (before: refused by name, the measured size asked for; now vLLM's bytes)
    assert [estimate_weights_bytes(_geometry("starcoder2-15b-gptq"), tp)
            for tp in (1, 2, 4, 8)] == [1_003_048_960, 501_610_496, 250_891_264, 126_349_312]
    assert estimate_weights_bytes(_geometry("phi-2-awq")) == 606_126_080
    # (the checkpoint's gpt_neox.layers.1.mlp.dense_4h_to_h, renamed model.layers.1...)
    names = CASES["gpt-neox-20b-awq-skip"]["tp"]["1"][0]["param_numel_by_name"]
    assert "model.layers.*.mlp.dense_4h_to_h.weight" in names
    assert estimate_weights_bytes(_geometry("gpt-neox-20b-awq-skip")) == sum(
        CASES["gpt-neox-20b-awq-skip"]["tp"]["1"][0]["param_bytes_by_dtype"].values())


def test_a_real_device_holds_the_ct_attention_scales_in_float32() -> None:
    real = json.loads((HERE / "real_device.json").read_text())["phi-2-ct-w8a8.config.json"]
    assert real["attn_scales_dtype"]["model.layers.0.self_attn.attn.k_scale"] == "torch.float32"
    assert estimate_weights_bytes(_geometry("phi-2-ct-w8a8")) == sum(
        real["param_bytes_by_dtype"].values()) == 681_881_636
