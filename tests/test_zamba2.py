"""Zamba2 (`kvcore.models.zamba2`) against vLLM 0.33.0's own Zamba2ForCausalLM built on the
meta device (tests/data/zamba2/): its KV cache specs in vLLM's order, groups and pool at TP 1
and 2 (specs.json), every rank's weight bytes, parameter count and buffers at TP 1, 2 and 4,
and the splits it refuses (census.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kv_census_rows import kvcli_form, vllm_form

from kvcore.errors import InputError
from kvcore.models import layer_specs
from kvcore.models.buffers import estimate_buffer_bytes
from kvcore.models.hf_config import load_hf_config, read_hf_config
from kvcore.models.weights import estimate_params, estimate_weights_bytes
from kvcore.sizing import (
    estimate_max_model_len_from_groups,
    kv_cache_config_from_groups,
    kv_cache_tokens,
    max_concurrency,
    resolve_kv_cache_config,
)
from kvcore.sizing.config import bytes_per_block
from kvcore.specs import DTYPE_BYTES
from tests.census_rows import built_ranks

DATA = Path(__file__).resolve().parent / "data" / "zamba2"
SPECS = json.loads((DATA / "specs.json").read_text())["cases"]
CENSUS = json.loads((DATA / "census.json").read_text())["cases"]
AT_TP = [(n, int(tp)) for n, c in SPECS.items() for tp in c]


def _geometry(name: str):
    return read_hf_config(load_hf_config(DATA / name))


def _vllm_name(name: str) -> str:
    """kvcli's name of a vLLM layer: its mixer "N.mixer" is kvcli's "mixer.N" (a name ending
    in its index, as every kvcli layer's)."""
    return name if name.startswith("model.attn.") else "mixer." + name.split(".")[0]


@pytest.mark.parametrize(("name", "tp"), AT_TP)
def test_specs_in_vllms_order(name: str, tp: int) -> None:
    want = SPECS[name][str(tp)]
    specs = layer_specs(_geometry(name), tp=tp, max_model_len=4096)
    assert list(specs) == [_vllm_name(s["name"]) for s in want["specs"]]
    assert [kvcli_form(s) for s in specs.values()] == [vllm_form(s) for s in want["specs"]]


@pytest.mark.parametrize(("name", "tp"), AT_TP)
def test_groups_and_pool_equal_vllms(name: str, tp: int) -> None:
    want = SPECS[name][str(tp)]
    r = resolve_kv_cache_config(model_config=str(DATA / name), max_model_len=4096,
                                num_blocks=1000, tensor_parallel_size=tp)
    assert (r.ctx.mamba_cache_mode, want["prefix_caching_by_default"]) == ("align", True)
    groups = list(r.config.kv_cache_groups)
    assert [(type(g.kv_cache_spec).__name__, list(g.layer_names), g.kv_cache_spec.block_size,
             g.kv_cache_spec.page_size_bytes) for g in groups] == [
        (g["type"], [_vllm_name(n) for n in g["layers"]], g["block_size"], g["page_size_bytes"])
        for g in want["groups"]]
    available = want["available_bytes"]
    cfg = kv_cache_config_from_groups(groups, available)
    assert (cfg.num_blocks, max_concurrency(groups, cfg.num_blocks, r.ctx),
            kv_cache_tokens(groups, cfg.num_blocks, r.ctx),
            estimate_max_model_len_from_groups(groups, r.ctx, available - bytes_per_block(groups))
            ) == (want["num_blocks"], want["max_concurrency"], want["kv_cache_tokens"],
                  want["max_model_len_fits"])


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CENSUS))
def test_weights_and_buffers_per_rank_equal_vllms(name: str, tp: int, rank: int) -> None:
    rec, g = CENSUS[name]["tp"][str(tp)][rank], _geometry(name)
    assert estimate_weights_bytes(g, tp) == sum(rec["param_bytes_by_dtype"].values())
    # (Mamba2's conv_weights is a view of its conv1d weight: no memory of its own)
    views = sum(v for k, v in CENSUS[name]["tp"][str(tp)][0]["param_numel_by_name"].items()
                if k.endswith("conv1d.weight")) * DTYPE_BYTES[g.dtype]
    buffers = sum(b for by in rec["buffer_bytes_by_dtype"].values() for b in by.values())
    assert estimate_buffer_bytes(g, tp) == buffers - views


@pytest.mark.parametrize("name", sorted(CENSUS))
def test_parameter_count_equals_vllms(name: str) -> None:
    assert estimate_params(_geometry(name))[0] == CENSUS[name]["tp"]["1"][0]["param_numel"]


def test_the_numbers_spelled_out() -> None:
    """Zamba2-2.7B's shape: 9 caches of 32 heads x 160 (its attention reads 2 x 2,560) at
    block 48, the Mamba page padded from 686,848 to 983,040 bytes; 2,662,214,560 parameters
    (the shared blocks counted once); 144 bytes of attention scales, no RoPE."""
    specs = SPECS["zamba2-2.7b-style.config.json"]["1"]
    assert [s["name"] for s in specs["specs"][:10]] == [f"model.attn.{j}" for j in range(9)] + [
        "9.mixer"]
    assert estimate_params(_geometry("zamba2-2.7b-style.config.json"))[0] == 2_662_214_560
    assert estimate_buffer_bytes(_geometry("zamba2-2.7b-style.config.json")) == 144
    # 7 uses over 3 blocks: vLLM numbers block b's from b x (7 + 2) // 3, skipping 5
    three = [s["name"] for s in SPECS["tiny-zamba2-three-blocks.config.json"]["1"]["specs"]]
    assert three[:7] == [f"model.attn.{j}" for j in (0, 1, 2, 3, 4, 6, 7)]


@pytest.mark.parametrize(("name", "said"), [
    ("tiny-zamba2.config.json", "num_groups must equal 1."),
    ("zamba2-7b-style.config.json", "num_groups must equal 1."),
    ("tiny-zamba2-three-blocks.config.json", "6 is not divisible by 4")])
def test_a_tp_vllm_cannot_split_is_refused_in_its_words(name: str, said: str) -> None:
    assert said in CENSUS[name]["tp"]["4"][0]["refused"]
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(model_config=str(DATA / name), tensor_parallel_size=4,
                                gpu_memory_gib=80)
    assert e.value.field == "tensor_parallel_size"
    assert said in e.value.message and e.value.message.endswith("; got 4")


@pytest.mark.parametrize(("change", "field", "said"), [
    ({"layers_block_type": ["mamba", "hybrid"], "hybrid_layer_ids": [0]}, "hybrid_layer_ids",
     "hybrid layer 1 of layers_block_type is not listed"),
    ({"attention_head_dim": 10}, "attention_head_dim", "must be attention_hidden_size 128"),
    ({"hidden_act": "relu"}, "hidden_act", "only GELU, got 'relu'"),
    ({"mamba_headdim": 8}, "mamba_headdim", "mamba_headdim x n_mamba_heads"),
    ({"layers_block_type": "hybrid"}, "layers_block_type", "expected a list of layer types"),
    ({"hybrid_layer_ids": list(range(100_001))}, "hybrid_layer_ids", "at most 100,000")])
def test_a_config_vllm_cannot_build_is_one_line(change: dict, field: str, said: str) -> None:
    cfg = {**load_hf_config(DATA / "tiny-zamba2.config.json"), **change}
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="z.json")
    assert (e.value.field, e.value.path) == (field, "z.json")
    assert said in e.value.message and "\n" not in str(e.value)


def test_the_files_values_win_over_the_derived_ones() -> None:
    """Zamba2Config derives hybrid_layer_ids from layers_block_type, but the file's list wins
    (the census's 8-layer config: 9 ids, 9 caches for 1 hybrid layer); use_long_context makes
    it 16,384 positions; the head is tied whatever the config says."""
    base = load_hf_config(DATA / "tiny-zamba2.config.json")
    g = read_hf_config({**base, "hybrid_layer_ids": [1, 4, 6, 7, 9]})
    assert list(layer_specs(g))[:5] == [f"model.attn.{j}" for j in (0, 1, 2, 3, 4)]
    assert len(layer_specs(g)) == 5 + 8
    g = read_hf_config({**base, "use_long_context": True, "tie_word_embeddings": False})
    assert (g.max_position_embeddings, g.tie_word_embeddings) == (16384, True)
    # (2^62 shared blocks: three of them used, named without walking the rest)
    g = read_hf_config({**base, "num_mem_blocks": 2**62})
    assert list(layer_specs(g))[:3] == ["model.attn.0", "model.attn.1", "model.attn.2"]


def test_the_clock_times_what_the_layers_run() -> None:
    """A Mamba2 mixer in each of 54 layers, the 9 hybrid layers' attention (q, k, v projected
    from 2 x 2,560) and gated MLP, the only feed-forward blocks; all-reduces: one a Mamba
    layer, three a hybrid one, the embedding's."""
    from kvcore.clock.layer_blocks import layer_blocks
    from kvcore.clock.work import WorkShape, work_groups
    g = _geometry("zamba2-2.7b-style.config.json")
    lb = layer_blocks(g)
    assert (lb.full, lb.mamba, lb.dense_ffn, lb.allreduces) == (9, 54, 9, 45 + 9 * 3 + 1)
    ws = WorkShape(g, 1, 2, 2, 2.0, 2.0, 2.0, False)
    qkv = next(grp for grp in work_groups(ws) if grp.name == "qkv_proj")
    assert qkv.bytes0 == 5120 * 3 * 32 * 160 * 2 * 9
