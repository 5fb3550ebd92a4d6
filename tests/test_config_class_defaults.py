"""Config keys read as vLLM 0.33.0 and its transformers read them (found by the perf_configs
campaign, tests/data/perf_configs/README.md): class defaults for keys a config.json leaves out,
vLLM's key aliases, layer patterns the config classes derive."""

from __future__ import annotations

import pytest

from kvcore.errors import InputError
from kvcore.models import read_hf_config

BASE = {"hidden_size": 1024, "num_attention_heads": 8, "num_hidden_layers": 8,
        "max_position_embeddings": 4096, "vocab_size": 1000, "intermediate_size": 2048}


def cfg(model_type: str, **kw) -> dict:
    return {"model_type": model_type, **BASE, **kw}


def test_class_defaults_fill_left_out_keys():
    g = read_hf_config(cfg("llama4_text", num_experts_per_tok=1, num_local_experts=4))
    assert g.head_dim == 128 and g.num_kv_heads == 8       # Llama4TextConfig's, not 1024 / 8
    c = cfg("qwen3_moe")
    del c["intermediate_size"]
    g = read_hf_config(c)
    assert (g.num_kv_heads, g.intermediate_size, g.num_experts, g.num_experts_per_tok) == (
        4, 6144, 128, 8)


def test_aliases_and_falcon_kv_heads():
    g = read_hf_config(cfg("ernie4_5_moe", num_key_value_heads=2, moe_num_experts=16, moe_k=3))
    assert (g.num_experts, g.num_experts_per_tok) == (16, 3)
    assert read_hf_config(cfg("falcon")).num_kv_heads == 1            # multi_query by default
    assert read_hf_config(cfg("falcon", new_decoder_architecture=True,
                              num_kv_heads=2)).num_kv_heads == 2
    assert read_hf_config(cfg("llama", n_head_kv=4, num_key_value_heads=2)).num_kv_heads == 4
    # FalconConfig's head_dim has no setter: transformers (and so vLLM) cannot load it
    with pytest.raises(InputError, match="Falcon's head size") as e:
        read_hf_config(cfg("falcon", head_dim=64))
    assert e.value.field == "head_dim"


def test_derived_sliding_layers():
    g = read_hf_config(cfg("exaone4", num_key_value_heads=2, sliding_window=64,
                           sliding_window_pattern=4))
    assert g.layer_kinds == ("sliding",) * 3 + ("full",) + ("sliding",) * 3 + ("full",)
    with pytest.raises(InputError, match="Exaone4"):
        read_hf_config(cfg("exaone4", num_key_value_heads=2, sliding_window=None))
    # an explicit null window: the model code passes none, every layer attends fully
    g = read_hf_config(cfg("gemma2", num_key_value_heads=2, head_dim=128, sliding_window=None))
    assert set(g.layer_kinds) == {"full"} and g.sliding_window is None


def qwen(model_type: str, **kw):
    return read_hf_config(cfg(model_type, num_key_value_heads=2, **kw))


def test_qwen_windows_are_the_cache_configs():
    """Qwen's attention takes CacheConfig.sliding_window, set only where the (derived)
    layer_types are absent or all sliding; transformers gives a window only with
    use_sliding_window, false by default."""
    # a window without use_sliding_window: none (kvcli slid every layer)
    for t in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe"):
        g = qwen(t, sliding_window=128)
        assert set(g.layer_kinds) == {"full"} and g.perf_swa == (0, 0), t
    # Qwen2/Qwen3 slide from max_window_layers on: all, none, or refused as vLLM's model does
    g = qwen("qwen3", use_sliding_window=True, sliding_window=128, max_window_layers=0)
    assert g.layer_kinds == ("sliding",) * 8 and g.sliding_window == 128
    assert g.perf_swa == (8, 128)
    g = qwen("qwen2", use_sliding_window=True, sliding_window=128)     # 28 by default, of 8
    assert set(g.layer_kinds) == {"full"} and g.perf_swa == (0, 128)
    with pytest.raises(InputError, match="max_window_layers 6 of 8 layers"):
        qwen("qwen3", use_sliding_window=True, sliding_window=128, max_window_layers=6)
    # Qwen2-MoE: even layers below max_window_layers, mixed: every layer attends fully, but
    # perf.py bills the four it lists
    g = qwen("qwen2_moe", use_sliding_window=True, sliding_window=128)
    assert set(g.layer_kinds) == {"full"} and g.perf_swa == (4, 128)
    # Qwen3-MoE derives no layer types: every layer slides
    g = qwen("qwen3_moe", use_sliding_window=True, sliding_window=128)
    assert g.layer_kinds == ("sliding",) * 8 and g.perf_swa == (8, 128)
    # given layer types: mixed with max_window_layers == the layers passes vLLM's check, full
    types = ["full_attention", "sliding_attention"] * 4
    g = qwen("qwen2", use_sliding_window=True, sliding_window=128, max_window_layers=8,
             layer_types=types)
    assert set(g.layer_kinds) == {"full"} and g.perf_swa == (4, 128)
