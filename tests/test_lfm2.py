"""LFM2 (`Lfm2ForCausalLM`, `Lfm2MoeForCausalLM`: short-convolution layers beside attention)
= what vLLM 0.33.0's
start-up derives for it (tests/data/lfm2/start.json, record_start.py there: `VllmConfig`, the
platform's hybrid block size with FlashAttention, `ShortConv.get_kv_cache_spec`,
`get_kv_cache_groups` and planning over 4 GiB, `resolve_kv_cache_block_sizes`), prefix caching
off and on, at max_model_len 8192; and the weights vLLM builds for it on the meta device
(census.json there: experts, their float32 score bias). Before, kvcli refused both by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.models.hf_config import load_hf_config, read_hf_config
from kvcore.models.weights import estimate_params, estimate_weights_bytes
from kvcore.prefix_match import resolve_block_sizes
from kvcore.sizing import (
    blocks_per_request,
    kv_cache_config_from_groups,
    kv_cache_tokens,
    max_concurrency,
    resolve_kv_cache_config,
)
from kvcore.specs import MambaSpec
from tests.census_rows import built_ranks

DATA = Path(__file__).resolve().parent / "data" / "lfm2"
CASES = json.loads((DATA / "start.json").read_text())["cases"]
MODES = [pytest.param(c, m, id=f"{c['name']}-{m}") for c in CASES for m in ("off", "on")]


@pytest.mark.parametrize(("case", "mode"), MODES)
def test_groups_specs_and_pool_equal_vllms(case: dict, mode: str) -> None:
    want = case["modes"][mode]
    r = resolve_kv_cache_config(model_config=str(DATA / f"{case['name']}.config.json"),
                                max_model_len=8192, num_blocks=1000,
                                enable_prefix_caching=mode == "on")
    groups = list(r.config.kv_cache_groups)
    assert [{"kind": "mamba" if isinstance(g.kv_cache_spec, MambaSpec) else "full",
             "block_size": g.kv_cache_spec.block_size, "num_layers": len(g.layer_names)}
            for g in groups] == want["groups"]
    conv = next(g.kv_cache_spec for g in groups if isinstance(g.kv_cache_spec, MambaSpec))
    attn = next(g.kv_cache_spec for g in groups if not isinstance(g.kv_cache_spec, MambaSpec))
    ws = want["conv_spec"]
    assert ([list(s) for s in conv.shapes], [f"torch.{d}" for d in conv.dtypes],
            conv.real_page_size_bytes, conv.page_size_bytes, attn.page_size_bytes,
            conv.num_prefill_checkpoint_blocks, blocks_per_request(conv, r.ctx)) == (
        ws["shapes"], ws["dtypes"], ws["real_page_size_bytes"], ws["page_size_bytes"],
        want["attention_page_size"], ws["num_prefill_checkpoint_blocks"],
        ws["max_memory_usage_pages"])
    assert conv.mamba_type == "short_conv" == ws["mamba_type"].rsplit(".", 1)[1].lower()
    # (with caching off vLLM hashes at the scheduler's block, the groups' lcm)
    assert resolve_block_sizes([g.kv_cache_spec for g in groups], None, mode == "on") == (
        want["scheduler_block_size"], want["hash_block_size"])
    cfg = kv_cache_config_from_groups(groups, want["available_bytes"])
    assert cfg.num_blocks == want["num_blocks"]
    assert max_concurrency(groups, cfg.num_blocks, r.ctx) == want["max_concurrency"]
    assert kv_cache_tokens(groups, cfg.num_blocks, r.ctx) == want["kv_cache_tokens"]


def test_lfm2_is_hybrid_and_caches_prefixes_by_default() -> None:
    assert {(c["is_hybrid"], c["prefix_caching_by_default"]) for c in CASES} == {(True, True)}
    r = resolve_kv_cache_config(model_config=str(DATA / "lfm2-1.2b-style.config.json"),
                                max_model_len=8192, num_blocks=1000, enable_prefix_caching=None)
    assert r.enable_prefix_caching is True


CENSUS = json.loads((DATA / "census.json").read_text())["cases"]


def _geometry(name: str):
    return read_hf_config(load_hf_config(DATA / name))


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CENSUS))
def test_bytes_per_rank_equal_vllms(name: str, tp: int, rank: int) -> None:
    rec = CENSUS[name]["tp"][str(tp)][rank]
    assert estimate_weights_bytes(_geometry(name), tp) == sum(rec["param_bytes_by_dtype"].values())


@pytest.mark.parametrize("name", sorted(CENSUS))
def test_parameter_count_equals_vllms(name: str) -> None:
    assert estimate_params(_geometry(name))[0] == CENSUS[name]["tp"]["1"][0]["param_numel"]


def test_the_head_is_tied_whatever_the_config_says() -> None:
    """tiny-lfm2 says ``"tie_embedding": false``, tiny-lfm2-moe ``"tie_word_embeddings":
    false``; vLLM built no lm_head of its own for either (lfm2.py and lfm2_moe.py tie it
    unconditionally); tiny-lfm2's MLP is 128 wide (int(2/3 x 192) rounded up to 32)."""
    for case in ("tiny-lfm2.config.json", "tiny-lfm2-moe.config.json"):
        names = CENSUS[case]["tp"]["1"][0]["param_numel_by_name"]
        assert not any(n.startswith("lm_head") for n in names)
        assert _geometry(case).tie_word_embeddings is True
    g = _geometry("tiny-lfm2.config.json")
    assert (g.tie_word_embeddings, g.intermediate_size) == (True, 128)
    names = CENSUS["tiny-lfm2.config.json"]["tp"]["1"][0]["param_numel_by_name"]
    assert names["model.layers.*.feed_forward.w2.weight"] == 4 * 128 * 64


@pytest.mark.parametrize(("drop", "change", "field"), [
    ("conv_dim", {}, "conv_dim"), ("block_dim", {}, "block_dim"),
    (None, {"layer_types": ["conv", "attention", "conv", "conv"]}, "layer_types"),
    (None, {"layer_types": ["conv"]}, "layer_types"),
    (None, {"block_ffn_dim_multiplier": "1"}, "block_ffn_dim_multiplier")])
def test_a_config_vllm_cannot_build_is_refused_naming_the_key(drop, change, field) -> None:
    from kvcore.errors import InputError

    cfg = {k: v for k, v in load_hf_config(DATA / "tiny-lfm2.config.json").items() if k != drop}
    with pytest.raises(InputError) as e:
        read_hf_config({**cfg, **change}, source="c.json")
    assert (e.value.path, e.value.field) == ("c.json", field)
