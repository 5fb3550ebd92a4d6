"""The architectures whose configs name their sizes by their own keys (GPT-2's n_layer, Bloom's
n_head, ChatGLM's num_layers, DBRX's d_model, the original Falcon's RefinedWeb keys) and the
pre-Llama decoders among vLLM 0.33's (GPT-2, GPTBigCode, GPT-J, GPT-NeoX, Bloom, OPT, Falcon,
Phi-2, StableLM, ChatGLM, StarCoder2): published checkpoints' configs (tests/data/gpt_family/),
vLLM's own classes built on the meta device: its KV cache specs at TP 1, and every rank's
parameters and buffers at TP 1, 2, 4 and 8. Before, kvcli refused the first group for a missing
'num_hidden_layers' and counted every one of them as a Llama (GPT-2: 66,964,224 parameters for
124,475,904; StarCoder's MLP split by TP where vLLM keeps it whole)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kv_census_rows import kvcli_form, same, vllm_form

from kvcore.errors import InputError
from kvcore.models import layer_specs, read_hf_config
from kvcore.models.buffers import estimate_buffer_bytes
from kvcore.models.weights import estimate_params, estimate_weights_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import built_ranks, refused_tps

DATA = Path(__file__).parent / "data" / "gpt_family"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
# (the configs vLLM builds: not the two original-keys Falcons, refused on every rank)
WEIGHTS = {n: c["weights"] for n, c in CASES.items() if "refused" not in c["kv"]}


def _config(name: str) -> dict:
    return json.loads((DATA / f"{name}.config.json").read_text())


def _geometry(name: str):
    return read_hf_config(_config(name), source=f"{name}.config.json")


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if "specs" in c["kv"]))
def test_kv_specs_equal_vllms(name: str) -> None:
    kv = CASES[name]["kv"]
    g = _geometry(name)
    ours = [kvcli_form(s) for s in layer_specs(g, max_model_len=kv["max_model_len"]).values()]
    assert same(ours, [vllm_form(s) for s in kv["specs"]])
    assert g.context_limit == kv["max_model_len"]


@pytest.mark.parametrize(("name", "key"), [("falcon-7b-old-keys", "rope_theta"),
                                           ("falcon-40b-old-keys", "rope_theta")])
def test_configs_vllm_cannot_build_are_refused(name: str, key: str) -> None:
    """The original Falcon keys (model_type RefinedWebModel / RefinedWeb): vLLM 0.33's RWConfig
    defaults neither a RoPE base nor tie_word_embeddings under transformers 5, and falcon.py
    fails on them (recorded: AttributeError); with both given it builds (the -rope_theta
    cases), 8 KV heads for falcon-40b's n_head_kv."""
    assert "refused" in CASES[name]["kv"]
    with pytest.raises(InputError) as e:
        _geometry(name)
    assert e.value.field == key and "\n" not in str(e.value)
    cfg = {**_config(name), "rope_theta": 10000.0}
    with pytest.raises(InputError) as e:
        read_hf_config(cfg)
    assert e.value.field == "tie_word_embeddings"


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(WEIGHTS))
def test_bytes_and_buffers_per_rank_equal_vllms(name: str, tp: int, rank: int) -> None:
    rec = WEIGHTS[name]["tp"][str(tp)][rank]
    g = _geometry(name)
    assert estimate_weights_bytes(g, tp) == sum(rec["param_bytes_by_dtype"].values())
    buffers = sum(b for by_dtype in rec["buffer_bytes_by_dtype"].values()
                  for b in by_dtype.values())
    assert estimate_buffer_bytes(g, tp) == buffers


@pytest.mark.parametrize("name", sorted(WEIGHTS))
def test_parameter_count_equals_vllms(name: str) -> None:
    assert estimate_params(_geometry(name)) == (WEIGHTS[name]["tp"]["1"][0]["param_numel"], 0)


REFUSED_TP = refused_tps(WEIGHTS)


@pytest.mark.parametrize(("name", "tp"), REFUSED_TP)
def test_what_vllm_cannot_shard_kvcli_refuses(name: str, tp: int) -> None:
    """Falcon-7B's 71 heads at TP 2, 4, 8; GPT-2's 12 at TP 8."""
    assert len(REFUSED_TP) == 7
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=_geometry(name), tensor_parallel_size=tp,
                                gpu_memory_gib=80, max_model_len=1024)
    assert e.value.field == "tensor_parallel_size"


def test_what_a_llama_count_got_wrong() -> None:
    """The numbers vLLM records, and the term kvcli missed for each."""
    gpt2 = WEIGHTS["gpt2"]["tp"]["1"][0]
    assert gpt2["param_numel"] == 124_475_904
    assert gpt2["param_numel_by_name"]["transformer.wpe.weight"] == 1024 * 768  # learned positions
    # StarCoder on the Transformers backend: attention split, MLP whole on every rank
    star = WEIGHTS["starcoder"]["tp"]["8"][0]["param_numel_by_name"]
    assert star["model.h.*.mlp.c_fc.weight"] == 40 * 6144 * 24576
    assert star["model.h.*.attn.c_attn.weight"] == 40 * 6144 * (6144 // 8 + 2 * 128)
    assert estimate_weights_bytes(_geometry("starcoder"), 8) == 25_221_177_344
    # ALiBi and learned positions: no RoPE cache, only the 16 B of scales a layer
    for name, layers in (("bloom-560m", 24), ("gpt2", 12), ("falcon-rw-1b", 24)):
        assert estimate_buffer_bytes(_geometry(name)) == 16 * layers
    # GPT-J's rotary is rotary_dim (64) of its 256-wide head: 2,048 x 64 bfloat16
    assert estimate_buffer_bytes(_geometry("gpt-j-6b")) == 2048 * 64 * 2 + 28 * 16
    # StarCoder2 on the backend too (kvcli counted a Llama: gated MLP, untied head, RoPE cache,
    # 43,990,855,680 B at TP 1 and 4,194,944 B of buffers): c_fc / c_proj with biases, the head
    # its embedding (Starcoder2Config's default), inv_freq and its original (64 float32 each)
    g = _geometry("starcoder2-15b")
    assert estimate_weights_bytes(g, 1) == 31_311_798_272
    assert estimate_buffer_bytes(g, 1) == 2 * 64 * 4 + 40 * 16
    star2 = WEIGHTS["starcoder2-15b"]["tp"]["1"][0]["param_numel_by_name"]
    assert star2["model.layers.*.mlp.c_fc.weight"] == 40 * 6144 * 24576
    assert "lm_head.weight" not in star2
    # the original Falcon keys: falcon.py's RoPE spans 8,192 positions, the model runs at 2,048
    g = _geometry("falcon-40b-old-keys-rope_theta")
    assert (g.num_kv_heads, g.context_limit, g.rope_caches[0].rows) == (8, 2048, 8192)


@pytest.mark.parametrize(("name", "key", "value"), [
    ("gpt2", "n_layer", "12"), ("gpt2", "n_inner", "x"), ("bloom-7b1-n_embed", "n_embed", 0),
    ("gpt-j-6b", "rotary_dim", "a"), ("chatglm3-6b", "ffn_hidden_size", -1),
    ("opt-6.7b", "ffn_dim", 1.5), ("falcon-40b-old-keys-rope_theta", "n_head_kv", 0)])
def test_a_bad_size_is_refused_under_the_files_own_key(name: str, key: str, value) -> None:
    with pytest.raises(InputError) as e:
        read_hf_config({**_config(name), key: value}, source="config.json")
    assert e.value.field == key and "\n" not in str(e.value)
    with pytest.raises(InputError) as e:
        read_hf_config({**_config("dbrx-instruct"), "attn_config": {"kv_n_heads": "8"}})
    assert e.value.field == "attn_config.kv_n_heads"


def test_pipeline_stages_hold_what_vllms_files_build_on_every_rank() -> None:
    """gpt2.py, opt.py, falcon.py, ... build the embedding, position embeddings, final norm
    and LM head on every PP rank (no PPMissingLayer; only forward asks is_first_rank): a
    stage of 6 of GPT-2's 12 layers holds them all beside its layers (from vLLM's source; the
    parameters from the TP 1 recording)."""
    names = WEIGHTS["gpt2"]["tp"]["1"][0]["param_numel_by_name"]
    whole = sum(v for k, v in names.items() if ".h." not in k)
    layers = sum(v for k, v in names.items() if ".h." in k)
    g = _geometry("gpt2")
    for stage in ((range(6), True, False), (range(6, 12), False, True)):
        assert estimate_weights_bytes(g, 1, stage) == 2 * (whole + layers // 2)
