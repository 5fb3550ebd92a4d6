"""Quantised checkpoints of MiniCPM-V, Idefics3 / SmolVLM, Phi-3.5-vision, Phi-4-multimodal,
Qwen2-Audio, Qwen2.5-Omni and Qwen3-Omni against vLLM 0.33.0's own classes, built on the meta
device at TP 1, 2, 4 and 8, every rank (tests/data/weights_census/quant_towers3/; every built
rank's bytes and buffers are tests/test_tower_censuses.py's): no "counted unquantised"
warning, vLLM's refusals in its words and order, the published checkpoints' bytes, the towers
vLLM builds without the quant_config, MiniCPM-V's resampler cast to the model dtype."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.int_quant_rank import unquantised_method
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import built_ranks, case_geometry, case_mm, refused_tps, vllms_words

DATA = Path(__file__).parent / "data" / "weights_census" / "quant_towers3"
ALL = json.loads((DATA / "answers.json").read_text())["cases"]
CASES = {n: c for n, c in ALL.items() if "refused" not in c}
REFUSED = refused_tps(CASES)


def _bytes(name: str, tp: int = 1) -> tuple[int, int]:
    """(kvcli's bytes, vLLM's) at rank 0 of `tp`."""
    rec = CASES[name]["tp"][str(tp)][0]
    return (estimate_weights_bytes(case_geometry(DATA, CASES, name), tp),
            sum(rec["param_bytes_by_dtype"].values()))


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_case_is_counted_unquantised(name: str) -> None:
    assert unquantised_method(case_geometry(DATA, CASES, name)) is None


@pytest.mark.parametrize(("name", "tp"), REFUSED)
def test_what_vllm_cannot_build_kvcli_refuses_in_its_words(name: str, tp: int) -> None:
    """The heads (4 tiny tower and text heads at TP 8, SmolVLM-256M's 9 text heads at TP 4 and
    8, Qwen2.5-Omni-7B's 28 at TP 8: vLLM's ModelConfig refuses them before any class is built;
    the recorder builds past that check), fp8 blocks, AWQ's and W4A16's groups; with the tower
    skipped too, where vLLM still constructs it."""
    g = case_geometry(DATA, CASES, name, applied=False)
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=g, tensor_parallel_size=tp, gpu_memory_gib=4096,
                                max_model_len=4096, mm=case_mm(CASES[name]))
    # (groups a layer's input cannot hold even whole are the checkpoint's, not the TP size's)
    assert e.value.field == ("quantization_config.group_size" if tp == 1
                             else "tensor_parallel_size")
    refused = CASES[name]["tp"][str(tp)][0]["refused"]
    if g.num_attention_heads % tp:
        assert f"{g.num_attention_heads} attention heads must be divisible" in e.value.message
    elif refused.startswith("ValueError"):
        assert vllms_words(refused).split("' ")[-1] in e.value.message


def test_the_census_covers_each_method_and_tp() -> None:
    assert (len(ALL), len(CASES), len(built_ranks(CASES)), len(REFUSED)) == (97, 96, 479, 162)
    assert sum(" --language-model-only" in n for n in CASES) == 4
    assert sum(" --mm-encoder-tp-mode data" in n for n in CASES) == 7
    # (the 4,304-wide MLP of MiniCPM-V 2.6's and Qwen3-Omni's towers, Qwen2.5-Omni's 3,420:
    # no whole 128-groups under AWQ and W4A16 at any TP; SmolVLM-256M's 576-wide text model)
    refused_at_1 = {"minicpm-v-2_6-awq-tower", "qwen3-omni-30b-awq", "qwen3-omni-30b-ct-w4a16",
                    "qwen2.5-omni-7b-awq-tower", "smolvlm-256m-awq"}
    for name, case in CASES.items():
        assert list(case["tp"]) == ["1", "2", "4", "8"]
        assert ("refused" in case["tp"]["1"][0]) == (name in refused_at_1), name


@pytest.mark.parametrize(("name", "want"), [
    # (kvcli counted each of these unquantised with a warning, or an fp8 tower's linears at
    # SigLIP's paths and widths, before: 16,198,551,008 B for both MiniCPM-V 2.6's, 17,863,627,776
    # for both Qwen2.5-Omni-7B's, 63,438,410,976 for Qwen3-Omni's FP8, 8,465,047,552 for
    # Phi-3.5-vision's AWQ, 9,945,851,488 for Idefics3-8B's fp8)
    ("minicpm-v-2_6-awq-skip-tower", 6_538_065_376), ("minicpm-v-2_6-gptq", 5_923_327_288),
    ("minicpm-v-2_6-fp8", 9_262_193_754), ("idefics3-8b-fp8", 9_515_907_308),
    ("smolvlm-256m-ct-fp8-dynamic", 407_424_156), ("phi-3.5-vision-awq", 2_671_550_464),
    ("phi-4-multimodal-fp8", 6_205_791_744), ("qwen2-audio-7b-instruct-awq", 7_206_666_240),
    ("qwen2.5-omni-7b-awq", 8_203_142_144), ("qwen2.5-omni-7b-gptq-int4", 8_203_142_144),
    ("qwen2.5-omni-7b-fp8", 10_663_811_960), ("qwen3-omni-30b-ct-fp8", 33_630_869_568),
    ("qwen3-omni-30b-fp8-block", 33_002_508_864),
])
def test_the_published_checkpoints_at_tp_1(name: str, want: int) -> None:
    assert _bytes(name) == (want, want)


def test_bitsandbytes_is_refused_by_both() -> None:
    """openbmb/MiniCPM-V-2_6-int4 is bitsandbytes nf4, which vLLM 0.33 does not know."""
    assert "Unknown quantization method: bitsandbytes" in ALL["minicpm-v-2_6-int4-bnb"]["refused"]
    cfg = json.loads((DATA / "minicpm-v-2_6-int4-bnb.config.json").read_text())
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, name="minicpm-v-2_6-int4-bnb")
    assert e.value.field == "quantization_config.quant_method"
    assert "unknown quantization method 'bitsandbytes'" in e.value.message


@pytest.mark.parametrize(("name", "tp", "layer"), [
    # (MiniCPM-V builds its language model before its tower: the text's shard refused first)
    ("tiny-minicpm-v-2_6-fp8-block", 4, "(layer 0's o_proj)"),
    ("tiny-minicpm-v-2_6-ct-w4a16", 4, "(layer 0's o_proj)"),
    ("tiny-idefics3-ct-w4a16", 4,
     "(the vision tower's model.vision_model.encoder.layers.0.self_attn.out_proj)"),
    ("minicpm-v-2_6-awq-tower", 1, "(the vision tower's vpm.encoder.layers.0.mlp.fc2)"),
    # (Qwen3-Omni's vision tower builds its blocks before its mergers)
    ("qwen3-omni-30b-fp8-block", 8, "(the vision tower's visual.blocks.0.attn.proj)"),
    # (its vision tower dropped: vLLM still constructs it, and refuses it)
    ("tiny-qwen2.5-omni-fp8-block --language-model-only", 4,
     "(the vision tower's visual.blocks.0.attn.proj)"),
])
def test_a_refusal_names_the_layer_vllm_meets_first(name: str, tp: int, layer: str) -> None:
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=case_geometry(DATA, CASES, name, applied=False),
                                tensor_parallel_size=tp, gpu_memory_gib=4096,
                                max_model_len=4096, mm=case_mm(CASES[name]))
    assert layer in e.value.message
    assert vllms_words(CASES[name]["tp"][str(tp)][0]["refused"]).split("' ")[-1] \
        in e.value.message


def test_minicpm_v_casts_its_resampler_to_the_model_dtype() -> None:
    """init_resampler builds it under float16 and moves it with .to(dtype): the fp8 kv_proj
    (384 x 256) and its scale in bfloat16, the tower's other linears fp8."""
    rec = CASES["tiny-minicpm-v-2_6-fp8"]["tp"]["1"][0]
    assert rec["param_numel_by_name"]["resampler.kv_proj.weight"] == 98_304
    assert rec["param_bytes_by_dtype"] == {"bfloat16": 3_833_106,
                                           "float8_e4m3fn": 3_702_784, "float32": 104}
    assert _bytes("tiny-minicpm-v-2_6-fp8") == (7_535_994, 7_535_994)
    assert _bytes("tiny-minicpm-v-2_6-ct-fp8") == (7_575_588, 7_575_588)


@pytest.mark.parametrize("method", ["awq", "fp8-block", "ct-w4a16"])
def test_minicpm_v_holds_its_quantised_tower_whole_under_data_mode(method: str) -> None:
    """--mm-encoder-tp-mode data: the tower's linears not split (their shards never refused:
    at TP 4 vLLM refuses the 256-wide tower's 64-wide out_proj shard in weights mode); the
    language model's still split."""
    name = f"tiny-minicpm-v-2_6-t512-{method}"
    data = f"{name} --mm-encoder-tp-mode data"
    assert CASES[name]["tp"]["4"][0]["refused"].startswith("ValueError")
    assert _bytes(data, 4)[0] == _bytes(data, 4)[1]
    assert _bytes(data, 2)[0] == _bytes(data, 2)[1] > _bytes(name, 2)[1]
    with pytest.raises(InputError, match="vpm.encoder.layers.0.self_attn.out_proj"):
        resolve_kv_cache_config(geometry=case_geometry(DATA, CASES, name),
                                tensor_parallel_size=4, gpu_memory_gib=4096,
                                max_model_len=4096)


@pytest.mark.parametrize("base", ["qwen2-audio-7b-instruct", "tiny-phi4mm"])
def test_towers_built_without_the_quant_config_stay_in_the_model_dtype(base: str) -> None:
    """Qwen2-Audio's encoder and projector, Phi-4-multimodal's NaViT, projection and audio
    embedding: the same tensors under every method."""
    names = [n for n in CASES if n.startswith(base + "-")]
    lm = ("language_model.", "model.layers.", "model.embed_tokens", "model.norm", "lm_head")
    towers = {json.dumps({k: v for k, v in CASES[n]["tp"]["1"][0]["param_numel_by_name"].items()
                          if not k.startswith(lm)}) for n in names}
    assert len(names) >= 3 and len(towers) == 1


@pytest.mark.parametrize("base", ["tiny-minicpm-v-2_6-ct-w4a16", "tiny-smolvlm-awq",
                                  "tiny-qwen2.5-omni-fp8-block"])
def test_a_skipped_tower_is_not_loaded(base: str) -> None:
    skipped = CASES[f"{base} --language-model-only"]["tp"]["1"][0]
    g = case_geometry(DATA, CASES, f"{base} --language-model-only")
    assert estimate_weights_bytes(g, 1) == sum(skipped["param_bytes_by_dtype"].values()) \
        < _bytes(base)[1]
