"""fp8 vision towers against vLLM 0.33.0's own classes (tests/data/weights_census/fp8/answers.json,
the multimodal configs and those built with a multimodal serving option, ``<config> <flag>
<value>``): the tower's linears fp8 with block scales, vLLM's block-shape refusals of its
shards, the ignore list naming its linears (`kvcore.models.fp8_vision`), and a partly named
fused linear's refusal naming the shards as the config wrote them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.mm_options import MMOptions
from kvcore.models.hf_config import read_hf_config
from kvcore.models.mm_serving import apply_mm, vision_rank_bytes
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import case_mm

DATA = Path(__file__).parent / "data"
FP8 = DATA / "weights_census" / "fp8"
CASES = json.loads((FP8 / "answers.json").read_text())["cases"]
OPTS = [n for n in CASES if " --" in n]
runner = CliRunner()


def _mm(name: str) -> MMOptions | None:
    return case_mm(CASES[name])


def _geometry(name: str):
    base = name.split(" --")[0]
    return read_hf_config(json.loads((DATA / base).read_text()), name=base)


def _bytes(name: str, tp: str) -> list[int]:
    return [sum(r["param_bytes_by_dtype"].values()) for r in CASES[name]["tp"][tp]]


def _case(name: str) -> str:
    return f"weights_census/fp8/{name}.config.json"


@pytest.mark.parametrize(("name", "tp"), [
    pytest.param(n, tp, id=f"{n}-tp{tp}") for n in OPTS for tp in CASES[n]["tp"]])
def test_with_the_multimodal_options_as_vllm_builds_or_refuses(name: str, tp: str) -> None:
    g, opts = _geometry(name), _mm(name)
    rec = CASES[name]["tp"][tp]
    if "refused" not in rec[0]:
        ours = estimate_weights_bytes(apply_mm(g, opts)[0], int(tp))
        assert [ours] * len(rec) == _bytes(name, tp)
        return
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=g, tensor_parallel_size=int(tp), gpu_memory_gib=80,
                                max_model_len=4096, mm=opts)
    assert e.value.field == "tensor_parallel_size"
    said = rec[0]["refused"]
    if said.startswith("ValueError"):
        assert said.removeprefix("ValueError: ") in e.value.message
    else:
        # (4 vision heads at TP 8: kvcli refuses the heads, as vllm serve does first)
        assert "attention heads" in e.value.message


def test_the_towers_linears_are_fp8_with_block_scales() -> None:
    # Qwen3.5: the blocks' qkv (1536 x 512), proj, linear_fc1/fc2 (512 x 512) and the merger's
    # linear_fc1 (2048 x 2048) and linear_fc2 (1024 x 2048): 9,437,184 weights at a byte,
    # less 576 float32 scales; kvcli counted them in bfloat16 (129,378,744 B)
    names = CASES[_case("qwen3-5-vl-fp8")]["tp"]["1"][0]["param_numel_by_name"]
    assert names["visual.blocks.0.attn.qkv.weight_scale_inv"] == 12 * 4
    assert names["visual.merger.linear_fc1.weight_scale_inv"] == 16 * 16
    assert "visual.patch_embed.proj.weight_scale_inv" not in names
    g = _geometry(_case("qwen3-5-vl-fp8"))
    assert estimate_weights_bytes(g, 1) == 119_943_864 == 129_378_744 - 9_437_184 + 4 * 576
    # Gemma 3's SigLIP: qkv_proj, out_proj, fc1, fc2; the projector stays bfloat16
    assert estimate_weights_bytes(_geometry(_case("gemma-3-mm-fp8")), 1) == 19_786_512 \
        == 22_931_472 - 2 * (3 + 1 + 1 + 1) * 512 * 512 + 4 * 2 * (48 + 3 * 16)


def test_a_siglip_mlp_not_64_wide_is_not_quantised() -> None:
    # intermediate 560 (SiglipMLP builds fc1/fc2 with quant_config None): its two layers'
    # fc1 and fc2 in bfloat16, 2 x 2 x 560 x 512 weights, no scales
    names = CASES[_case("gemma-3-mm-fp8-mlp-odd")]["tp"]["1"][0]["param_numel_by_name"]
    assert not any("mlp.fc" in k and "scale" in k for k in names)
    assert "vision_tower.vision_model.encoder.layers.*.self_attn.out_proj.weight_scale_inv" in names
    g = _geometry(_case("gemma-3-mm-fp8-mlp-odd"))
    assert len(g.vision_linears) == 4
    assert estimate_weights_bytes(g, 1) == _bytes(_case("gemma-3-mm-fp8-mlp-odd"), "1")[0]


def test_the_towers_bytes_on_a_rank_are_vllms_less_the_language_model_only_build() -> None:
    # the JSON's vision_weights_bytes: what --language-model-only takes away in vLLM
    for model in ("qwen3-5-vl-fp8", "gemma-3-mm-fp8", "qwen3-5-moe-vl-fp8"):
        for tp in ("1", "2"):
            full = _bytes(_case(model), tp)[0]
            text = _bytes(f"{_case(model)} --language-model-only", tp)[0]
            assert vision_rank_bytes(_geometry(_case(model)), int(tp)) == full - text
    assert full - text == 6_381_696   # (Qwen3.5-MoE's tower at TP 2)


@pytest.mark.parametrize(("model", "vllm_names"), [
    # model.visual.blocks.0.attn.qkv / .1.attn.proj / merger.linear_fc1 (the checkpoint's
    # spelling) and visual.blocks.1.mlp.linear_fc2 (vLLM's) skipped; model.visual.blocks.0.mlp,
    # a prefix, names nothing
    ("qwen3-5-vl-fp8-skip-vision", {"visual.blocks.0.attn.qkv", "visual.blocks.1.attn.proj",
                                    "visual.merger.linear_fc1", "visual.blocks.1.mlp.linear_fc2"}),
    # SigLIP's q/k/v_proj all named (its fused qkv_proj skipped), layer 1's fc1 and out_proj;
    # the projector's parameter is no linear
    ("gemma-3-mm-fp8-skip-vision", {"vision_tower.vision_model.encoder.layers.0.self_attn.qkv_proj",
                                    "vision_tower.vision_model.encoder.layers.1.mlp.fc1",
                                    "vision_tower.vision_model.encoder.layers.1.self_attn.out_proj"})])
def test_the_ignore_list_names_tower_linears_after_vllms_renames(model: str,
                                                                 vllm_names: set[str]) -> None:
    g, base = _geometry(_case(model)), _geometry(_case(model.split("-skip")[0]))
    assert {lin.path for lin in base.vision_linears} - {lin.path for lin in g.vision_linears} \
        == vllm_names
    names = CASES[_case(model)]["tp"]["1"][0]["param_numel_by_name"]
    if model.startswith("qwen"):
        assert "visual.blocks.0.attn.qkv.weight_scale_inv" not in names
        assert "visual.blocks.0.mlp.linear_fc1.weight_scale_inv" in names
    for tp in ("1", "2", "4"):
        assert [estimate_weights_bytes(g, int(tp))] * int(tp) == _bytes(_case(model), tp)


@pytest.mark.parametrize(("model", "tp", "module", "remedy"), [
    ("qwen3-5-vl-fp8-narrow", 2, "visual.blocks.0.mlp.linear_fc1", True),
    ("gemma-3-mm-fp8-narrow", 2, "vision_tower.vision_model.encoder.layers.0.self_attn.out_proj",
     False)])
def test_the_cli_refuses_a_tower_shard_of_partial_blocks_in_one_line(model: str, tp: int,
                                                                      module: str,
                                                                      remedy: bool) -> None:
    cfg = str(FP8 / f"{model}.config.json")
    res = runner.invoke(app, ["config", "--model-config", cfg, "--tp", str(tp),
                              "--gpu-memory-gib", "80"])
    assert res.exit_code == 2, res.output
    assert res.stdout == "" and "Traceback" not in res.stderr
    said = CASES[_case(model)]["tp"][str(tp)][0]["refused"].removeprefix("ValueError: ")
    # (the file's model_type, not its text model's: qwen3_5_text and gemma3_text before)
    model_type = "qwen3_5" if model.startswith("qwen") else "gemma3"
    assert res.stderr == (
        f"error: option --tensor-parallel-size: {model_type}'s fp8 weight blocks [128, 128] do "
        f"not split over it (the vision tower's {module}), and vLLM refuses to build it: "
        f"\"{said}\"; got {tp}"
        + (" (--mm-encoder-tp-mode data holds the tower whole on every rank)"
           if remedy else "") + "\n")


@pytest.mark.parametrize(("model", "names", "but_not"), [
    ("gemma-3-mm-fp8-skip-half-vision-qkv",
     ("model.vision_tower.vision_model.encoder.layers.0.self_attn.q_proj, "
      "model.vision_tower.vision_model.encoder.layers.0.self_attn.k_proj"),
     "model.vision_tower.vision_model.encoder.layers.0.self_attn.v_proj"),
    ("qwen3-5-text-fp8-skip-half-qkv-hf-names",
     ("model.language_model.layers.3.self_attn.q_proj, "
      "model.language_model.layers.3.self_attn.k_proj"),
     "model.language_model.layers.3.self_attn.v_proj"),
    # (the multimodal class: vLLM's own words name language_model.model.layers.3, where kvcli
    # quoted its text frame, model.layers.3)
    ("qwen3-5-vl-fp8-skip-half-qkv-hf-names",
     ("model.language_model.layers.3.self_attn.q_proj, "
      "model.language_model.layers.3.self_attn.k_proj"),
     "model.language_model.layers.3.self_attn.v_proj")])
def test_a_partly_ignored_fused_linear_is_named_as_the_config_wrote_it(model: str, names: str,
                                                                       but_not: str) -> None:
    # (kvcli named the checkpoint's model.language_model.layers.3 as vLLM's model.layers.3;
    # vLLM's own words name its path: language_model's, the vision tower's)
    cfg = str(FP8 / f"{model}.config.json")
    res = runner.invoke(app, ["config", "--model-config", cfg, "--gpu-memory-gib", "80"])
    assert res.exit_code == 2, res.output
    assert res.stdout == "" and res.stderr.count("\n") == 1
    said = CASES[_case(model)]["tp"]["1"][0]["refused"].removeprefix("ValueError: ")
    assert res.stderr == (
        f"error: {cfg}: field 'quantization_config.ignored_layers': names {names} but not "
        f"{but_not}, shards of one fused linear, and vLLM refuses to build it: \"{said}\"\n")


def test_under_mxfp4_the_tower_is_not_quantised() -> None:
    # Mxfp4Config builds every linear unquantised (it quantises routed experts only): the
    # fp8 config's Gemma 3 with quant_method mxfp4 is all bfloat16, 35,511,296 B at TP 1
    name = _case("gemma-3-mm-mxfp4")
    g = _geometry(name)
    assert g.vision_linears == ()
    for tp in ("1", "2", "4"):
        assert list(CASES[name]["tp"][tp][0]["param_bytes_by_dtype"]) == ["bfloat16"]
        assert [estimate_weights_bytes(g, int(tp))] * int(tp) == _bytes(name, tp)
    assert _bytes(name, "1")[0] == 35_511_296
