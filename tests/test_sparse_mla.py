"""Sparse MLA (DeepSeek-V3.2, GLM-5) against vLLM 0.33.0's own specs and planning.

tests/data/sparse_mla/answers.json was recorded from the real vLLM (record_sparse_mla.py there:
the published configs built on the meta device, the sparse backend an H100 picks). Before,
kvcli refused both ('model_type' deepseek_v32 / glm_moe_dsa, or 'index_topk'). vLLM keeps two
caches a layer, the indexer's (132 bytes a token) and the latent (1,152 in bf16), at block 64,
all in one group: 82,176 bytes a layer a block.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models import layer_specs, load_hf_config, read_hf_config
from kvcore.models.buffers import estimate_buffer_bytes
from kvcore.models.weights import estimate_params
from kvcore.sizing import get_kv_cache_groups, kv_cache_config_from_groups
from kvcore.sizing.config import capacity, vllm_tensor_count
from kvcore.sizing.resolve import resolve_kv_cache_config
from kvcore.specs import MLAAttentionSpec, SizingContext

DATA = Path(__file__).resolve().parent / "data" / "sparse_mla"
ANSWERS = json.loads((DATA / "answers.json").read_text())


def geometry(name: str):
    return read_hf_config(load_hf_config(DATA / f"{name}.config.json"))


@pytest.mark.parametrize("case", ANSWERS["cases"],
                         ids=lambda c: f"{c['config']}-{c['max_model_len']}")
def test_specs_and_planning_as_vllm(case) -> None:
    g = geometry(case["config"])
    assert g.num_layers == case["num_layers"]
    specs = layer_specs(g, max_model_len=case["max_model_len"])   # (the default block 16)
    ours = [(type(s).__name__, s.block_size, s.num_kv_heads, s.head_size, s.dtype,
             s.cache_dtype_str, s.page_size_bytes) for s in specs.values()]
    assert ours == [tuple(s[1:]) for s in case["specs"]]
    ctx = SizingContext(max_model_len=case["max_model_len"], max_num_batched_tokens=8192,
                        max_concurrent_batches=2)
    groups = get_kv_cache_groups(specs)
    config = kv_cache_config_from_groups(groups, case["available"])
    cap = capacity(config, ctx, case["available"], case["max_model_len"])
    assert [{"num_layers": len(gr.layer_names), "spec": type(gr.kv_cache_spec).__name__,
             "block_size": gr.kv_cache_spec.block_size,
             "page_size_bytes": gr.kv_cache_spec.page_size_bytes} for gr in groups] \
        == [{k: v for k, v in gr.items() if k != "kv_cache_spec_kind"} for gr in case["groups"]]
    # (its events' kind, which kvcli's replay gives: tests/test_replay_sparse_mla.py)
    assert [gr["kv_cache_spec_kind"] for gr in case["groups"]] == ["mla_attention"]
    assert vllm_tensor_count(groups) == case["num_tensors"]
    assert (config.num_blocks, cap.max_concurrency, cap.kv_cache_tokens,
            cap.max_model_len_fits) == (case["num_blocks"], case["max_concurrency"],
                                        case["kv_cache_tokens"], case["max_model_len_fits"])


def test_the_recorded_numbers() -> None:
    """DeepSeek-V3.2 in 52.1 GB: 10,403 blocks of 64 tokens (5,012,736 bytes: 61 x 82,176)."""
    first = ANSWERS["cases"][0]
    assert (first["block_size"], first["groups"][0]["page_size_bytes"], first["num_blocks"]) \
        == (64, 61 * (73_728 + 8_448), 10_403)


def test_a_deepseek_v3_config_with_index_topk_is_sparse() -> None:
    cfg = {**load_hf_config(DATA / "deepseek-v3.2.config.json"), "model_type": "deepseek_v3"}
    specs = layer_specs(read_hf_config(cfg, source="x.json"))
    assert len(specs) == 122 and all(isinstance(s, MLAAttentionSpec) for s in specs.values())


@pytest.mark.parametrize("kwargs, field", [
    ({"block_size": 32}, "block_size"),
    ({"block_size": 16}, "block_size"),        # (given: vLLM finds no backend)
    ({"kv_cache_dtype": "fp8_e5m2"}, "kv_cache_dtype"),
    ({"kv_cache_dtype": "float16"}, "kv_cache_dtype"),
])
def test_what_no_sparse_backend_takes_is_refused(kwargs, field) -> None:
    with pytest.raises(InputError) as e:
        layer_specs(geometry("deepseek-v3.2"), **kwargs)
    assert e.value.field == field and "\n" not in str(e.value)


def test_a_given_multiple_of_64_is_kept() -> None:
    specs = layer_specs(geometry("glm-5"), block_size=128)
    assert {s.block_size for s in specs.values()} == {128}


def test_the_indexer_weights_are_counted() -> None:
    """Each layer's indexer: wq_b 1536 x (64 x 128), wk + weights_proj 7168 x (128 + 64),
    k_norm 2 x 128 (DeepSeek-V3.2): 13,959,424 a layer over DeepSeek-V3's."""
    v32 = sum(estimate_params(geometry("deepseek-v3.2")))
    v3 = sum(estimate_params(read_hf_config(
        {k: v for k, v in load_hf_config(DATA / "deepseek-v3.2.config.json").items()
         if not k.startswith("index_")} | {"model_type": "deepseek_v3"}, source="x.json")))
    assert v32 - v3 == 61 * (1536 * 64 * 128 + 7168 * (128 + 64) + 2 * 128)


@pytest.mark.parametrize("key, value", [
    ("index_topk_freq", 0), ("index_topk_freq", "2"), ("index_skip_topk_offset", None),
    ("index_skip_topk_offset", 1.5), ("index_topk_pattern", 7)])
def test_bad_index_cache_keys_are_refused_by_field(key, value) -> None:
    """IndexCache's keys (served: tests/test_sparse_mla_variants.py), a value vLLM cannot use
    (a period of 0 divides by zero, a null offset fails its arithmetic) refused by its key."""
    cfg = {**load_hf_config(DATA / "deepseek-v3.2.config.json"), key: value}
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="x.json")
    assert e.value.field == key and "\n" not in str(e.value)


def test_the_top_k_scratch_is_counted_as_vllm_allocates_it() -> None:
    # (DeepseekV32Model's / DeepseekV2Model's topk_indices_buffer: max_num_batched_tokens x
    # index_topk int32, made on the GPU as the model is built: 2,048 x 2,048 x 4 = 16 MiB;
    # kvcli counted it for DeepSeek-V4 only: 188,490 blocks here before)
    name = "weights_census/quant2/deepseek-v3.2-l4-fp8.config.json"
    g = read_hf_config(load_hf_config(DATA.parent / name))
    res = resolve_kv_cache_config(geometry=g, gpu_memory_gib=80)
    assert res.buffers_bytes == 41_943_104 + 2048 * 2048 * 4
    assert res.config.num_blocks == 188_439
    glm = geometry("glm-5")     # (GlmMoeDsaForCausalLM: the same class, on every TP rank)
    assert estimate_buffer_bytes(glm, 8, batched_tokens=8192) - estimate_buffer_bytes(
        glm, 8) == 8192 * 2048 * 4
