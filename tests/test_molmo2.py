"""Molmo2 (`Molmo2ForConditionalGeneration`): its language model and tower as kvcli reads them,
beside what tests/test_tower_censuses.py checks on every rank against vLLM 0.33.0's own class
(tests/data/weights_census/mm_molmo2/): the added embedding rows and the Qwen3 / OLMo q/k norms
(kvcli read neither before: Molmo2-8B 533,504 parameters short), the tower at TP 1, the 80 GiB
blocks, and what vLLM cannot build, refused in one line naming the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import assert_config_blocks, refused_tps

DATA = Path(__file__).parent / "data" / "weights_census" / "mm_molmo2"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]


def _config(base: str) -> dict:
    return json.loads((DATA / f"{base}.config.json").read_text())


def test_the_text_model_is_read_as_vllm_builds_it() -> None:
    """Molmo2-8B (Qwen3): 151,936 + 128 embedding rows, q/k norms a head wide, no QKV bias;
    Molmo2-O-7B (OLMo 3): q/k norms 32 x 128 + 32 x 128 wide, whole on every rank."""
    q = read_hf_config(_config("molmo2-8b"))
    assert (q.vocab_size, q.added_vocab, q.attention_bias, q.qk_norm, q.qk_norm_width,
            q.tie_word_embeddings) == (151_936, 128, False, True, 0, False)
    o = read_hf_config(_config("molmo2-o-7b"))
    assert (o.qk_norm, o.qk_norm_width, o.num_kv_heads) == (True, 8_192, 32)


def test_the_tower_is_vllms() -> None:
    """SigLIP 2 so400m cut after layer 25 of 27 (the adapter reads -3 and -9), the pooling and
    the projector into 4,096: 470,443,472 parameters, the difference vLLM's class makes
    without it."""
    g = read_hf_config(_config("molmo2-8b"))
    whole, lm_only = (CASES[n]["tp"]["1"][0]["param_numel"]
                      for n in ("molmo2-8b", "molmo2-8b --language-model-only"))
    assert g.vision_params == whole - lm_only == 470_443_472
    assert (g.vision_modalities, g.vision_data_parallel) == (("image", "video"), False)


def test_a_vit_with_fewer_kv_heads_than_ranks_keeps_one_a_rank() -> None:
    """2 ViT KV heads at TP 4 and 8: one whole a rank, as vLLM's QKVParallelLinear replicates
    them (kvcli had split them: 1,359,200 and 799,664 B a rank); every rank equal."""
    g = read_hf_config(_config("tiny-molmo2-vit-gqa"))
    assert g.vision_kv_floor == (2, 3 * 2 * 16 * 129)
    for tp, rank in ((4, 1_371_584), (8, 818_240)):
        recorded = {sum(r["param_bytes_by_dtype"].values())
                    for r in CASES["tiny-molmo2-vit-gqa"]["tp"][str(tp)]}
        assert recorded == {rank} == {estimate_weights_bytes(g, tp)}


@pytest.mark.parametrize(("base", "blocks"), [
    # (before: 26,548, 29,752 and 7,678, the tower uncounted and the added rows missed)
    ("molmo2-8b", 26_149), ("molmo2-4b", 29_380), ("molmo2-o-7b", 7_568)])
def test_80_gib_blocks_without_the_uncounted_tower_warning(base: str, blocks: int) -> None:
    assert_config_blocks(DATA / f"{base}.config.json", f"{blocks:,}")


@pytest.mark.parametrize(("name", "tp"), refused_tps(
    {n: c for n, c in CASES.items() if "refused" not in c}))
def test_a_tp_vllm_cannot_build_kvcli_refuses(name: str, tp: int) -> None:
    """tiny-molmo2's 4 text heads at TP 8 (vLLM: an AssertionError), whatever the options."""
    assert "AssertionError" in CASES[name]["tp"][str(tp)][0]["refused"]
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=read_hf_config(_config(name.split(" ")[0])),
                                tensor_parallel_size=tp, gpu_memory_gib=80, max_model_len=4096)
    assert e.value.field == "tensor_parallel_size"


def test_a_missing_text_field_is_refused_as_vllm_fails_on_it() -> None:
    cfg = _config("molmo2-8b")
    del cfg["text_config"]["additional_vocab_size"]
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, name="x.json")
    assert e.value.field == "text_config.additional_vocab_size"
    assert e.value.message.startswith("missing: vLLM's molmo2.py reads it")


@pytest.mark.parametrize(("where", "value", "field"), [
    ("vit_config", None, "vit_config"),
    ("adapter_config", {**_config("molmo2-8b")["adapter_config"], "vit_layers": "-3"},
     "adapter_config.vit_layers"),
    ("vit_config", {**_config("molmo2-8b")["vit_config"], "hidden_size": "1152"},
     "vit_config.hidden_size")])
def test_a_tower_vllm_cannot_build_is_refused(where: str, value: object, field: str) -> None:
    with pytest.raises(InputError) as e:
        read_hf_config({**_config("molmo2-8b"), where: value}, name="x.json")
    assert e.value.field == field


def test_a_quantised_molmo2_is_not_sized_quietly() -> None:
    cfg = {**_config("molmo2-8b"), "quantization_config": {
        "quant_method": "fp8", "activation_scheme": "dynamic"}}
    assert read_hf_config(cfg).weights_unmodelled == "a quantised Molmo2 checkpoint's vision tower"
