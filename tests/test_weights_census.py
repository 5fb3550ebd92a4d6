"""kvcli's weights estimate against vLLM 0.33.0's own model classes, built on the meta device
for every preset and typed-in config at TP 1, 2, 4 and 8, every rank
(tests/data/weights_census/answers.json, recorded by record_census.py there): the parameter
count and the bytes a rank holds, exactly, vision towers included (Gemma 3's SigLIP and
projector, Qwen3.5's: parts split by TP, parts whole on every rank), and under vLLM's
multimodal serving options (a case named ``<model> <flag> <value>``: `kvcore.models.mm_serving`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.mm_options import MMOptions
from kvcore.models.hf_config import read_hf_config
from kvcore.models.mm_serving import apply_mm
from kvcore.models.presets import PRESETS
from kvcore.models.weights import estimate_params, estimate_weights_bytes
from tests.census_rows import built_ranks, case_mm, check_ranks_agree, refused_tps

DATA = Path(__file__).parent / "data"
CASES = json.loads((DATA / "weights_census" / "answers.json").read_text())["cases"]


def _mm(name: str) -> MMOptions | None:
    return case_mm(CASES[name])


def _geometry(name: str, *, applied: bool = True):
    base = name.split(" ")[0]
    cfg = PRESETS[base][1] if base in PRESETS else json.loads((DATA / base).read_text())
    g = read_hf_config(cfg, name=base)
    return apply_mm(g, _mm(name))[0] if applied else g


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES))
def test_bytes_per_rank_equal_vllms(name: str, tp: int, rank: int) -> None:
    rec = CASES[name]["tp"][str(tp)][rank]
    assert estimate_weights_bytes(_geometry(name), tp) == sum(rec["param_bytes_by_dtype"].values())


@pytest.mark.parametrize("name", sorted(CASES))
def test_parameter_count_equals_vllms(name: str) -> None:
    dense, mxfp4 = estimate_params(_geometry(name))
    rec = CASES[name]["tp"]["1"][0]
    if mxfp4:
        # vLLM stores MXFP4 experts packed (two values a byte) with their scales; the bytes
        # test above checks them; the rest is counted parameter for parameter
        names = rec["param_numel_by_name"]
        packed = sum(v for k, v in names.items() if "experts.routed_experts.w" in k
                     and not k.endswith("_bias"))
        assert dense == rec["param_numel"] - packed
        assert mxfp4 == 2 * sum(v for k, v in names.items() if k.endswith(("w13_weight", "w2_weight")))
    else:
        assert dense == rec["param_numel"]


def test_the_census_covers_every_preset_and_tp() -> None:
    assert set(PRESETS) <= set(CASES)
    check_ranks_agree(CASES)


REFUSED = refused_tps(CASES)


@pytest.mark.parametrize(("name", "tp"), REFUSED)
def test_what_vllm_cannot_build_kvcli_refuses(name: str, tp: int) -> None:
    """vLLM asserts a TP dividing every attention's heads, the vision tower's too (the tiny
    Qwen3.5 VL configs' 2 at TP 4 and 8; Falcon-H1's and Granite's 12 at TP 8; Qwen2-VL-7B's
    and Qwen2.5-VL-7B's 28 at TP 8), and each shard of a linear whole (Qwen2.5-VL's 3,420-wide
    vision MLP at TP 8, even with the tower skipped: it is still constructed): one line."""
    from kvcore.errors import InputError
    from kvcore.sizing.resolve import resolve_kv_cache_config

    assert len(REFUSED) == 6 + 15 + 12      # (15: + GLM-4.7-Flash's 20 heads at TP 8)
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=_geometry(name, applied=False), tensor_parallel_size=tp,
                                gpu_memory_gib=80, max_model_len=4096, mm=_mm(name))
    assert e.value.field == "tensor_parallel_size"
    assert f"must be divisible by it, as vLLM requires; got {tp}" in e.value.message


@pytest.mark.parametrize(("name", "experts", "tp"), [
    ("qwen2-moe-sparse", 4, 8), ("qwen3-moe-sparse", 2, 4), ("qwen3-moe-sparse", 4, 4)])
def test_more_ranks_than_experts_is_refused_in_vllms_words(name, experts, tp) -> None:
    """Qwen2-MoE's, Qwen3-MoE's and Qwen3-Next's sparse MoE blocks raise "Tensor parallel size
    T is greater than the number of experts E." as vLLM builds them (qwen2_moe.py,
    qwen3_moe.py, qwen3_next.py); kvcli sized such a model. As many ranks as experts builds."""
    from dataclasses import replace

    from kvcore.errors import InputError
    from kvcore.sizing.resolve import resolve_kv_cache_config

    g = replace(_geometry(f"weights_census/{name}.config.json", applied=False),
                num_experts=experts)
    if tp <= experts:
        resolve_kv_cache_config(geometry=g, tensor_parallel_size=tp, gpu_memory_gib=80,
                                max_model_len=4096)
        return
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=g, tensor_parallel_size=tp, gpu_memory_gib=80,
                                max_model_len=4096)
    assert e.value.field == "tensor_parallel_size"
    assert e.value.message.endswith(f"'Tensor parallel size {tp} is greater than the number "
                                    f"of experts {experts}.'; got {tp}")
