"""Model geometry from Hugging Face config.json files: layer kinds, Mamba shapes, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models import layer_specs, load_hf_config, load_preset, read_hf_config
from kvcore.models.geometry import hybrid_block_size, mamba_state
from kvcore.models.presets import find_preset
from kvcore.specs import FullAttentionSpec, MambaSpec, SlidingWindowSpec

BASE = {"model_type": "llama", "num_hidden_layers": 4, "num_attention_heads": 8,
        "hidden_size": 512, "max_position_embeddings": 4096}


def test_defaults_and_head_dim() -> None:
    g = read_hf_config(BASE)
    assert g.num_kv_heads == 8 and g.head_dim == 64 and g.dtype == "bfloat16"
    assert g.layer_kinds == ("full",) * 4


def test_gemma3_pattern_from_defaults() -> None:
    g = load_preset("google/gemma-3-27b-it")
    assert g.sliding_window == 1024 and g.vocab_size == 262208
    assert [i for i, k in enumerate(g.layer_kinds) if k == "full"] == list(range(5, 62, 6))


def test_gpt_oss_alternates_and_sinks_cost_no_kv() -> None:
    g = load_preset("gpt-oss-20b")
    assert g.layer_kinds == ("sliding", "full") * 12 and g.sliding_window == 128
    specs = layer_specs(g)
    assert specs["layers.0"] == SlidingWindowSpec(16, 8, 64, "bfloat16", sliding_window=128)
    assert specs["layers.1"] == FullAttentionSpec(16, 8, 64, "bfloat16")
    # the same without layer_types: even layers slide (vLLM's gpt_oss.py)
    cfg = {**BASE, "model_type": "gpt_oss", "sliding_window": 128}
    assert read_hf_config(cfg).layer_kinds == ("sliding", "full") * 2


def test_sliding_window_switches() -> None:
    # llama.py slides only where layer_types says so (vLLM 0.33, as Mistral's layers): a
    # window alone leaves every layer full (kvcli slid them all before)
    assert read_hf_config({**BASE, "sliding_window": 4096}).layer_kinds == ("full",) * 4
    # (a model type with no rule of its own: kvcli's generic reading, every layer slides)
    slides = {**BASE, "model_type": "exaone", "sliding_window": 4096}
    assert read_hf_config(slides).layer_kinds == ("sliding",) * 4
    off = {**BASE, "sliding_window": 4096, "use_sliding_window": False}
    assert read_hf_config(off).layer_kinds == ("full",) * 4
    typed = {**BASE, "sliding_window": 64, "layer_types": [
        "sliding_attention", "full_attention", "chunked_attention", "full_attention"],
        "attention_chunk_size": 32}
    g = read_hf_config(typed)
    assert g.layer_kinds == ("sliding", "full", "chunked", "full")
    assert g.attention_chunk_size == 32


def test_jamba_layout_and_mamba1_state() -> None:
    g = load_preset("jamba-v0.1")
    assert [i for i, k in enumerate(g.layer_kinds) if k == "full"] == [4, 12, 20, 28]
    shapes, dtypes = mamba_state(g.mamba, "bfloat16", 1)
    # vLLM's mamba1_state_shape: conv (d_conv - 1, expand * hidden), SSM (expand * hidden, d_state)
    assert shapes == ((3, 8192), (8192, 16)) and dtypes == ("bfloat16", "bfloat16")
    specs = layer_specs(g, max_model_len=4096)
    # state 311296 bytes; attention 2 * 8 * 128 * 2 = 4096 bytes a token:
    # block 16 * cdiv(311296, 16 * 4096) = 80, page 327680
    assert hybrid_block_size(4096, 311296, 16) == 80
    assert specs["layers.4"].block_size == 80 and specs["layers.4"].page_size_bytes == 327680
    m = specs["layers.0"]
    assert isinstance(m, MambaSpec) and m.real_page_size_bytes == 311296
    assert m.page_size_bytes == 327680 and m.block_size == 80
    none_mode = layer_specs(g, max_model_len=4096, mamba_cache_mode="none")
    assert none_mode["layers.0"].block_size == 4096  # one state per request


def test_mamba2_state_from_layer_types() -> None:
    cfg = {**BASE, "model_type": "granitemoehybrid", "layer_types": [
        "mamba", "mamba", "mamba", "attention"], "mamba_d_state": 128, "mamba_d_conv": 4,
        "mamba_n_heads": 16, "mamba_d_head": 64, "mamba_n_groups": 1}
    g = read_hf_config(cfg)
    shapes, _ = mamba_state(g.mamba, "bfloat16", 1)
    # conv dim = 16 * 64 + 2 * 1 * 128 = 1280; SSM (heads, head dim, state)
    assert shapes == ((3, 1280), (16, 64, 128))
    # tp 2 with one group: the group is replicated so each shard keeps it (n_groups -> 2)
    shapes2, _ = mamba_state(g.mamba, "bfloat16", 2)
    assert shapes2 == ((3, (1024 + 2 * 2 * 128) // 2), (8, 64, 128))


@pytest.mark.parametrize("missing", ["num_hidden_layers", "num_attention_heads", "hidden_size",
                                     "max_position_embeddings"])
def test_missing_keys_name_the_field(missing) -> None:
    cfg = dict(BASE)
    del cfg[missing]
    with pytest.raises(InputError, match=missing) as err:
        read_hf_config(cfg, source="config.json")
    assert err.value.field == missing and "config.json" in str(err.value)


def test_bad_files(tmp_path) -> None:
    p = tmp_path / "config.json"
    p.write_text("[1, 2]")
    with pytest.raises(InputError, match="JSON object"):
        load_hf_config(p)
    p.write_text('{"a": ')
    with pytest.raises(InputError, match="not valid JSON"):
        load_hf_config(p)
    bad = {**BASE, "layer_types": ["full_attention"]}
    with pytest.raises(InputError, match="layer_types"):
        read_hf_config(bad)
    with pytest.raises(InputError, match="sliding_window"):
        read_hf_config({**BASE, "layer_types": ["sliding_attention"] * 4})
    with pytest.raises(InputError, match="unsupported dtype"):
        read_hf_config({**BASE, "torch_dtype": "int4"})


def test_preset_lookup() -> None:
    assert find_preset("Llama-3.1-8B") == "llama-3.1-8b"
    assert find_preset("meta-llama/Llama-3.1-70B") == "llama-3.1-70b"
    assert find_preset("nope") is None
    with pytest.raises(InputError, match="unknown model") as err:
        load_preset("nope")
    assert err.value.message.endswith("(or give a HF config.json as model_config, or the "
                                      "layers, kv_heads and head_dim)")
    # a command that takes only a preset (curve --capacity-gib, bench --gpu) offers no other
    with pytest.raises(InputError, match="unknown model") as err:
        load_preset("nope", others=False)
    assert err.value.message == "unknown model 'nope'; see kvcli config --list for the 13 presets"


def test_preset_equals_its_config_json_on_disk(tmp_path) -> None:
    from kvcore.models.presets import PRESETS
    _repo, cfg = PRESETS["gemma-3-27b"]
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    a = read_hf_config(load_hf_config(p))
    b = load_preset("gemma-3-27b")
    assert a.layer_kinds == b.layer_kinds and a.head_dim == b.head_dim == 128


def test_llama4_chunked_local_layers() -> None:
    # Llama 4: every 4th layer is NoPE (global); the others use chunked local attention.
    nope = [int((i + 1) % 4 != 0) for i in range(8)]
    cfg = {**BASE, "num_hidden_layers": 8, "model_type": "llama4_text",
           "attention_chunk_size": 8192, "no_rope_layers": nope}
    g = read_hf_config(cfg)
    assert g.layer_kinds == ("chunked", "chunked", "chunked", "full") * 2
    from kvcore.sizing import resolve_kv_cache_config
    r = resolve_kv_cache_config(geometry=g, num_blocks=10000, max_model_len=4096)
    # 6 chunked + 2 full: group size 2 -> 3 chunked groups and 1 full group
    kinds = [grp.kv_cache_spec.kind for grp in r.config.kv_cache_groups]
    assert kinds == ["chunked_local"] * 3 + ["full"]


def test_llama4_layers_as_transformers_fills_them_in() -> None:
    """Llama4TextConfig fills a missing or empty no_rope_layers (a NoPE layer every
    no_rope_layer_interval, 4) and a missing attention_chunk_size (8,192): the real Scout
    config's `"no_rope_layers": []` was sized as 48 full-attention layers."""
    cfg = {**BASE, "num_hidden_layers": 8, "model_type": "llama4_text", "no_rope_layers": []}
    g = read_hf_config(cfg)
    assert g.layer_kinds == ("chunked", "chunked", "chunked", "full") * 2
    assert g.attention_chunk_size == 8192
    g = read_hf_config({**cfg, "no_rope_layer_interval": 2, "attention_chunk_size": 512})
    assert g.layer_kinds == ("chunked", "full") * 4 and g.attention_chunk_size == 512
    # an explicit null chunk size: vLLM's layers attend globally
    for none in (None, 0):
        g = read_hf_config({**cfg, "attention_chunk_size": none})
        assert g.layer_kinds == ("full",) * 8 and g.attention_chunk_size is None
    with pytest.raises(InputError) as e:
        read_hf_config({**cfg, "no_rope_layers": [1, 0]}, source="s.json")
    assert e.value.field == "no_rope_layers" and "must list 8 integer flags" in e.value.message


def test_a_wrappers_own_quantization_config_wins_over_its_text_configs() -> None:
    """vLLM reads a multimodal wrapper's quantization_config first, its text_config's only
    without one: kvcli kept only the text config's (an FP8 checkpoint sized at bf16)."""
    wrapped = {"model_type": "mllama_like", "text_config": BASE,
               "quantization_config": {"quant_method": "fp8"}}
    assert read_hf_config(wrapped).quantization == "fp8"
    text = {**BASE, "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128,
                                            "zero_point": True}}
    assert read_hf_config({**wrapped, "text_config": text}).quantization == "fp8"
    assert read_hf_config({"model_type": "w", "text_config": text}).quantization == "awq"


def test_architectures_with_unmodelled_state_are_refused() -> None:
    """Bailing linear, OLMo hybrid...: read as attention they would size a cache vLLM never
    allocates (before: Mamba2ForCausalLM and Zamba2ForCausalLM, and Kimi Linear, modelled
    since, were sized as 64 full-attention layers and refused)."""
    cfg = {"architectures": ["OlmoHybridForCausalLM"], "model_type": "olmo_hybrid",
           "num_hidden_layers": 54, "num_attention_heads": 32, "hidden_size": 2560,
           "max_position_embeddings": 4096}
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="m.json")
    assert e.value.field == "architectures"
    assert "linear-attention layers" in e.value.message


@pytest.mark.parametrize("preset, path", [
    ("qwen3-next-80b-a3b", "mamba/qwen3-next-80b-a3b.config.json"),
    ("nemotron-nano-9b-v2", "mamba/nemotron-nano-9b-v2.config.json"),
    ("deepseek-v3", "mla/deepseek-v3.config.json"),
    ("deepseek-v2-lite", "mla/deepseek-v2-lite.config.json")])
def test_new_presets_are_their_recorded_configs(preset, path) -> None:
    """The presets give the geometry of the config files vLLM's answers were recorded from."""
    import dataclasses

    a = load_preset(preset)
    b = read_hf_config(load_hf_config(Path(__file__).resolve().parent / "data" / path))
    assert dataclasses.replace(a, name="", source="") == dataclasses.replace(b, name="",
                                                                             source="")
