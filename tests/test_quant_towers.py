"""Quantised checkpoints of the LLaVA family (CLIP, SigLIP), Mistral 3, PaliGemma, InternVL
(Hugging Face format and remote code, `tests/test_quant_towers_internvl_chat.py`), GLM-4.1V /
4.5V, Qwen2-VL, Qwen2.5-VL and Qwen3.5 against vLLM 0.33.0's own classes, built on the
meta device at TP 1, 2, 4 and 8, every rank (tests/data/weights_census/quant_towers/): the
bytes and buffers of every rank vLLM built, the tower's quantised linears included
(`kvcore.models.fp8_vision`, `kvcore.models.tower_int_quant`), and vLLM's refusals."""

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
from tests.census_rows import (
    assert_rank_equal,
    built_ranks,
    case_geometry,
    case_mm,
    refused_tps,
    vllms_words,
)

DATA = Path(__file__).parent / "data" / "weights_census" / "quant_towers"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
BUILT = built_ranks(CASES)
REFUSED = refused_tps(CASES)


@pytest.mark.parametrize(("name", "tp", "rank"), BUILT)
def test_bytes_and_buffers_per_rank_equal_vllms(name: str, tp: int, rank: int) -> None:
    g = case_geometry(DATA, CASES, name)
    assert_rank_equal(g, tp, CASES[name]["tp"][str(tp)][rank])
    assert unquantised_method(g) is None


@pytest.mark.parametrize(("name", "tp"), REFUSED)
def test_what_vllm_cannot_build_kvcli_refuses_in_its_words(name: str, tp: int) -> None:
    """The heads (12 GLM, 4 CLIP / SigLIP heads, 8 text heads at TP 8) or a shard: fp8 blocks,
    AWQ's and W4A16's groups, the tower's first where vLLM builds it first; with the tower
    skipped (--language-model-only) too: vLLM still constructs it. Qwen2-VL's 28 text heads
    at TP 8: vLLM's ModelConfig refuses them before any class is built (the recorder builds
    past that check, so the tower's shard is recorded), and kvcli does too."""
    g = case_geometry(DATA, CASES, name, applied=False)
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=g, tensor_parallel_size=tp, gpu_memory_gib=4096,
                                max_model_len=4096, mm=case_mm(CASES[name]))
    # (groups a layer's input cannot hold even whole are the checkpoint's, not the TP size's)
    assert e.value.field == ("quantization_config.group_size" if tp == 1
                             else "tensor_parallel_size")
    refused = CASES[name]["tp"][str(tp)][0]["refused"]
    if g.num_attention_heads == 28 and tp == 8:
        assert "28 attention heads must be divisible by it, as vLLM requires" in e.value.message
    elif refused.startswith("ValueError"):
        # (vLLM's words; a language-model layer is named by kvcli's path, "model.layers.0.
        # self_attn.o_proj", where vLLM's is under "language_model.")
        assert vllms_words(refused).split("' ")[-1] in e.value.message


def test_the_census_covers_each_method_and_tp() -> None:
    assert (len(CASES), len(BUILT), len(REFUSED)) == (164, 1188, 206)
    assert sum(" --language-model-only" in n for n in CASES) == 3
    # (Qwen2.5-VL's 3,420-wide down_proj: no whole 128-groups under AWQ and W4A16 at any TP)
    refused_at_1 = {"qwen2.5-vl-7b-awq", "qwen2.5-vl-7b-ct-w4a16"}
    for name, case in CASES.items():
        assert list(case["tp"]) == ["1", "2", "4", "8"]
        assert ("refused" in case["tp"]["1"][0]) == (name in refused_at_1)
    words = {CASES[n]["tp"][str(t)][0]["refused"].split(":")[0] for n, t in
             (p.values for p in REFUSED)}
    assert words == {"ValueError", "AssertionError"}


@pytest.mark.parametrize(("name", "tower_layer"), [
    # (the tower's first linear vLLM refuses, before the language model's)
    ("tiny-llava-clip-ct-w4a16",
     "vision_tower.vision_model.encoder.layers.0.self_attn.out_proj"),
    ("glm-4.1v-9b-thinking-ct-w4a16", "visual.merger.down_proj"),
])
def test_a_tower_shard_is_refused_naming_vllms_layer(name: str, tower_layer: str) -> None:
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=case_geometry(DATA, CASES, name),
                                tensor_parallel_size=4, gpu_memory_gib=4096,
                                max_model_len=4096)
    assert f"(the vision tower's {tower_layer})" in e.value.message
    assert f"for layer '{tower_layer}' is not divisible by group_size=128" in e.value.message


def _bytes(name: str, tp: int = 1) -> tuple[int, int]:
    """(kvcli's bytes, vLLM's) at rank 0 of `tp`."""
    rec = CASES[name]["tp"][str(tp)][0]
    g = case_geometry(DATA, CASES, name)
    return estimate_weights_bytes(g, tp), sum(rec["param_bytes_by_dtype"].values())


def test_the_published_checkpoints() -> None:
    # RedHatAI's Mistral-Small-3.1 FP8-dynamic and w4a16: the Pixtral tower and projector
    # ignored, in bfloat16; the language model fp8 (float32 channel scales) or packed
    assert _bytes("mistral-small-3.1-24b-ct-fp8-dynamic") == (25_806_019_280,) * 2
    assert _bytes("mistral-small-3.1-24b-ct-w4a16", 2) == (_bytes(
        "mistral-small-3.1-24b-ct-w4a16", 2)[1],) * 2
    rec = CASES["mistral-small-3.1-24b-ct-fp8-dynamic"]["tp"]["1"][0]["param_bytes_by_dtype"]
    assert rec["float8_e4m3fn"] == 22_229_811_200
    # GLM-4.5V-FP8 (written as compressed-tensors fp8, its tower and routers ignored)
    assert _bytes("glm-4.5v-ct-fp8", 4)[0] == _bytes("glm-4.5v-ct-fp8", 4)[1]


@pytest.mark.parametrize(("name", "unquantised"), [
    # (vLLM's bytes at TP 1 against those of the same tower ignored: the tower packed)
    ("tiny-llava-clip-fp8", "tiny-llava-clip-ct-fp8-ignore-tower"),
    ("tiny-llava-clip-awq", "tiny-llava-clip-awq-skip-tower"),
    ("paligemma-3b-pt-224-ct-w4a16", "paligemma-3b-pt-224-ct-w4a16-ignore-tower"),
])
def test_the_tower_vllm_quantises_is_smaller(name: str, unquantised: str) -> None:
    assert _bytes(name)[0] == _bytes(name)[1] < _bytes(unquantised)[1]


def test_internvl_leaves_its_tower_unquantised_under_every_method() -> None:
    """interns1_vit.py's InternS1VisionModel does not hand its quant_config to the encoder."""
    names = [n for n in CASES if n.startswith("tiny-internvl-") and "-chat-" not in n]
    towers = {json.dumps({k: v for k, v in CASES[n]["tp"]["1"][0]["param_numel_by_name"].items()
                          if k.startswith("vision_tower")}) for n in names}
    assert len(names) == 10 and len(towers) == 1


def test_modelopt_leaves_the_llava_encoders_unquantised_whatever_its_list() -> None:
    """get_quant_method's hard-coded vision_tower / vision_model prefixes: the CLIP encoder in
    float16, the projector's linear_1 / linear_2 fp8 with their two scales each."""
    names = CASES["tiny-llava-clip-modelopt-fp8"]["tp"]["1"][0]["param_numel_by_name"]
    scales = sorted(n for n in names if n.endswith("_scale") and "language_model" not in n)
    assert scales == [f"multi_modal_projector.linear_{i}.{s}_scale" for i in (1, 2)
                      for s in ("input", "weight")]
    assert _bytes("tiny-llava-clip-modelopt-fp8", 2)[0] == \
        _bytes("tiny-llava-clip-modelopt-fp8", 2)[1]


@pytest.mark.parametrize("base", ["tiny-llava-clip-ct-w4a16", "tiny-llava-clip-fp8-block",
                                  "tiny-mistral3-modelopt-fp8"])
def test_a_skipped_tower_is_not_loaded(base: str) -> None:
    """--language-model-only: the tower and projector, quantised or not, are not on the GPU."""
    skipped = CASES[f"{base} --language-model-only"]["tp"]["2"][0]
    assert not any(n.startswith(("vision_tower", "multi_modal_projector"))
                   for n in skipped["param_numel_by_name"])
    g = case_geometry(DATA, CASES, f"{base} --language-model-only")
    assert estimate_weights_bytes(g, 2) == sum(skipped["param_bytes_by_dtype"].values()) \
        < _bytes(base, 2)[1]


def test_the_cli_sizes_a_quantised_tower() -> None:
    runner = CliRunner()
    path = str(DATA / "tiny-llava-clip-awq.config.json")
    res = runner.invoke(app, ["config", "--model-config", path, "--gpu-memory-gib", "80",
                              "--json"])
    assert res.exit_code == 0, res.output
    memory = json.loads(res.stdout)["memory"]
    assert memory["weights_unquantised_method"] is None and memory["weights_estimated"]
    res = runner.invoke(app, ["config", "--model-config", path, "--gpu-memory-gib", "80",
                              "--tensor-parallel-size", "4"])
    assert res.exit_code == 2 and res.stdout == "" and res.stderr.count("\n") == 1
    assert "(the vision tower's vision_tower.vision_model.encoder.layers.0.self_attn." \
           "out_proj)" in res.stderr
