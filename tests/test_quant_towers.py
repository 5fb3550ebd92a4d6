"""Quantised checkpoints of the LLaVA family (CLIP, SigLIP), Mistral 3, PaliGemma, InternVL
(Hugging Face format) and GLM-4.1V / 4.5V against vLLM 0.33.0's own classes, built on the
meta device at TP 1, 2, 4 and 8, every rank (tests/data/weights_census/quant_towers/): where the
checkpoint's list leaves the tower and projector out of the quant_config the bytes and buffers
of every rank are vLLM's; where vLLM quantises the tower, kvcli refuses the estimate in one line
asking for the measured size (`kvcore.models.tower_quant`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models.int_quant_rank import unquantised_method
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import assert_rank_equal, built_ranks, case_geometry, refused_tps

DATA = Path(__file__).parent / "data" / "weights_census" / "quant_towers"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
# (the lists that leave the whole tower and projector unquantised: AWQ's substrings, the
# compressed-tensors regexes; GLM's tower is at visual., which the LLaVA regexes miss)
SIZED = sorted(n for n in CASES if n.endswith("-skip-tower")
               or n.endswith("-ignore-tower") and not n.startswith("glm")
               or n.startswith(("mistral-small", "glm-4.5v")))
BUILT = built_ranks(CASES)


def _sized(name: str) -> bool:
    return name in SIZED


@pytest.mark.parametrize(("name", "tp", "rank"), [p for p in BUILT if _sized(p.values[0])])
def test_a_tower_left_unquantised_is_counted_exactly(name: str, tp: int, rank: int) -> None:
    g = case_geometry(DATA, CASES, name)
    assert_rank_equal(g, tp, CASES[name]["tp"][str(tp)][rank])
    assert unquantised_method(g) is None


@pytest.mark.parametrize(("name", "tp", "rank"), [p for p in BUILT if not _sized(p.values[0])])
def test_a_quantised_tower_is_refused_asking_for_the_measure(name: str, tp: int,
                                                              rank: int) -> None:
    g = case_geometry(DATA, CASES, name)
    with pytest.raises(InputError) as e:
        estimate_weights_bytes(g, tp)
    assert e.value.field == "weights_gib"
    arch = g.architecture
    assert e.value.message.startswith(f"{name}: kvcli does not estimate {arch}'s vision tower "
                                      f"in a quantised ({g.quantization}) checkpoint")
    assert e.value.message.endswith("give the weights' measured size")
    # (counted in the model dtype it was more than vLLM's bytes: the tower's linears quantised)
    rec = CASES[name]["tp"][str(tp)][rank]
    assert any(d != str(g.dtype) for d in rec["param_bytes_by_dtype"])


@pytest.mark.parametrize(("name", "tp"), refused_tps(CASES))
def test_what_vllm_cannot_build_kvcli_refuses(name: str, tp: int) -> None:
    """(at a TP vLLM refuses, kvcli refuses: the heads or a language-model shard in vLLM's
    words, else the tower's estimate; a tower shard's own alignment kvcli does not check)"""
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=case_geometry(DATA, CASES, name, applied=False),
                                tensor_parallel_size=tp, gpu_memory_gib=80,
                                max_model_len=4096)
    assert e.value.field in ("tensor_parallel_size", "weights_gib")


def test_the_census_draws_what_kvcli_sizes_and_what_it_refuses() -> None:
    assert (len(CASES), len(SIZED), len(BUILT), len(refused_tps(CASES))) == (57, 19, 399, 77)
    assert sum(1 for p in BUILT if _sized(p.values[0])) == 151
    for case in CASES.values():
        assert list(case["tp"]) == ["1", "2", "4", "8"]


def test_the_published_checkpoints() -> None:
    # RedHatAI's Mistral-Small-3.1 FP8-dynamic: the language model fp8 with float32 channel
    # scales, the Pixtral tower and projector (438,958,080 parameters) in bfloat16
    rec = CASES["mistral-small-3.1-24b-ct-fp8-dynamic"]["tp"]["1"][0]
    g = case_geometry(DATA, CASES, "mistral-small-3.1-24b-ct-fp8-dynamic")
    assert estimate_weights_bytes(g) == sum(rec["param_bytes_by_dtype"].values())
    assert rec["param_bytes_by_dtype"]["float8_e4m3fn"] == 22_229_811_200
    assert g.vision_params == 438_958_080


def test_the_cli_refuses_a_quantised_tower_in_one_line() -> None:
    runner = CliRunner()
    path = str(DATA / "tiny-llava-clip-fp8.config.json")
    res = runner.invoke(app, ["config", "--model-config", path, "--gpu-memory-gib", "80"])
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.startswith("error: option --weights-gib: lmsys/vicuna-7b-v1.5: kvcli does "
                                 "not estimate LlavaForConditionalGeneration's vision tower")
    assert res.stderr.count("\n") == 1
    res = runner.invoke(app, ["config", "--model-config", path, "--gpu-memory-gib", "80",
                              "--weights-gib", "0.1"])
    assert res.exit_code == 0, res.output
    # (the tower dropped: not loaded, the language model sized as fp8)
    res = runner.invoke(app, ["config", "--model-config", path, "--gpu-memory-gib", "80",
                              "--language-model-only"])
    assert res.exit_code == 0, res.output
