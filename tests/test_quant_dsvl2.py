"""DeepSeek-VL2's tower under quantised checkpoints against vLLM 0.33.0's class, built on the
meta device at TP 1, 2, 4 and 8 (tests/data/weights_census/quant_dsvl2/answers.json, recorded
by record_quant_dsvl2.py there; every built rank's bytes: tests/test_tower_censuses.py): at TP 1
the timm tower takes no quant_config; above it the 56 MLP linears vLLM swaps in take it by
names without ``vision.`` and are cast to the model dtype with the tower. The refusals in
vLLM's words, the warnings gone, the lists that do and do not keep the MLPs unquantised."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import case_geometry, refused_tps, vllms_words

DATA = Path(__file__).parent / "data" / "weights_census" / "quant_dsvl2"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
REFUSED = refused_tps(CASES)


def _refusal(name: str, tp: int) -> InputError:
    g = case_geometry(DATA, CASES, name)
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=g, tensor_parallel_size=tp, gpu_memory_gib=80,
                                max_model_len=4096)
    return e.value


@pytest.mark.parametrize(("name", "tp"), REFUSED)
def test_what_vllm_cannot_build_kvcli_refuses_in_its_words(name: str, tp: int) -> None:
    """fp8 blocks, AWQ and W4A16 groups of 128 do not split fc1's or fc2's 4,304 over TP 2, 4
    or 8 (an AWQ list naming "vision" or a regex on it does not reach them); the published
    tiny's 10 heads at TP 4 and 8."""
    assert len(REFUSED) == 17
    e = _refusal(name, tp)
    assert e.field == "tensor_parallel_size" and e.message.endswith(f"got {tp}")
    words = vllms_words(CASES[name]["tp"][str(tp)][0]["refused"])
    if name.startswith("deepseek-vl2-tiny"):
        assert "10 attention heads" in e.message
        return
    assert words.removeprefix("ValueError: ").split(" This happens")[0] in e.message
    fc = "fc1" if "fp8-block" in name else "fc2"
    assert f"(the vision tower's blocks.0.mlp.{fc})" in e.message


@pytest.mark.parametrize("base", ["tiny-dsvl2-awq", "tiny-dsvl2-gptq", "tiny-dsvl2-ct-w4a16",
                                  "tiny-dsvl2-ct-fp8", "tiny-dsvl2-modelopt-fp8"])
def test_the_int_and_compressed_tensors_towers_are_sized_without_a_warning(base: str) -> None:
    """Counted unquantised before, the whole model, with a warning (TP 1: the AWQ one 45,019,136
    B over vLLM's 1,413,341,312; compressed-tensors FP8 30,293,980 B over)."""
    res = CliRunner().invoke(app, ["config", "--model-config", str(DATA / f"{base}.config.json"),
                                   "--gpu-memory-gib", "80", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["warnings"] == []


def test_the_mlps_by_their_own_names_stay_unquantised() -> None:
    """``mlp.fc1`` / ``mlp.fc2`` in modules_to_not_convert, or a regex on them in the ignore
    list, keep the swapped MLPs in the model dtype: built at every TP (a list naming "vision"
    is refused above TP 1, as vLLM refuses it)."""
    for name in ("tiny-dsvl2-awq-skip-fc", "tiny-dsvl2-ct-w4a16-ignore-fc"):
        assert all("refused" not in CASES[name]["tp"][tp][0] for tp in ("2", "4", "8"))
    for name in ("tiny-dsvl2-awq-skip-tower", "tiny-dsvl2-ct-w4a16-ignore-tower"):
        assert all("refused" in CASES[name]["tp"][tp][0] for tp in ("2", "4", "8"))


def test_fp8_weights_and_scales_end_in_the_model_dtype() -> None:
    """At TP 2 the swapped MLPs' fp8 weights and per-tensor scales are cast to bfloat16 with the
    tower (112 B of scales a rank kvcli missed before): the fp8 bytes are the text model's."""
    rank = CASES["tiny-dsvl2-fp8"]["tp"]["2"][0]
    names = rank["param_numel_by_name"]
    assert names["vision.blocks.0.mlp.fc1.weight_scale"] == 1
    assert rank["param_bytes_by_dtype"] == {"bfloat16": 854_997_568,
                                            "float8_e4m3fn": 15_204_352, "float32": 104}
