"""Gemma 3n's and Gemma 4's text models as vLLM 0.33 builds their KV caches
(`kvcore.models.kv_sharing`): the KV-shared layers have no spec, no group and no page; Gemma 4's
full layers cache their own head size. Against tests/data/sched_gemma/planning.json (vLLM's
classes built on the meta device, their specs and vLLM's planner over them; plan_gemma.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from kv_census_rows import kvcli_specs, same, vllm_specs

from kvcore.errors import InputError
from kvcore.models import layer_specs, read_hf_config
from kvcore.sizing import get_kv_cache_groups, kv_cache_config_from_groups, kv_cache_tokens
from kvcore.sizing import max_concurrency as kvcli_max_concurrency
from kvcore.specs import SizingContext

DATA = Path(__file__).resolve().parent / "data" / "sched_gemma"
ROWS = json.loads((DATA / "planning.json").read_text())


def _index(name: str) -> int:
    return int(re.search(r"layers\.(\d+)", name).group(1))


@pytest.mark.parametrize("name", sorted(ROWS))
def test_specs_and_pool_as_vllm(name: str) -> None:
    row = ROWS[name]
    ours = kvcli_specs(row, row["config"]["architectures"][0])
    assert not isinstance(ours, InputError), str(ours)
    assert same(ours, vllm_specs(row)), (ours, vllm_specs(row))
    g = read_hf_config(row["config"])
    assert [i for i, s in enumerate(g.kv_shared) if s] == \
        sorted(_index(n) for n in row["kv_sharing"])
    specs = layer_specs(g, max_model_len=row["max_model_len"])
    groups = get_kv_cache_groups(specs)
    ctx = SizingContext(max_model_len=row["max_model_len"], max_num_batched_tokens=8192,
                        max_concurrent_batches=2)
    for p in row["planning"]:
        assert [{"layers": [_index(n) for n in grp.layer_names],
                 "block_size": grp.kv_cache_spec.block_size,
                 "page_size_bytes": grp.kv_cache_spec.page_size_bytes,
                 "spec": type(grp.kv_cache_spec).__name__} for grp in groups] == \
            [{**x, "layers": [_index(n) for n in x["layers"]]} for x in p["groups"]]
        cfg = kv_cache_config_from_groups(groups, p["available"])
        assert cfg.num_blocks == p["num_blocks"]
        assert kvcli_max_concurrency(groups, cfg.num_blocks, ctx) == p["max_concurrency"]
        assert kv_cache_tokens(groups, cfg.num_blocks, ctx) == p["kv_cache_tokens"]


def test_the_recorded_numbers() -> None:
    """E4B: 20 caches for 35 layers (16 sliding, 4 full), the shared sliding layers reading
    layer 18, the full ones layer 19; Gemma 4's defaults: 5 full layers 512 wide a head, and
    the sliding layers' block raised to 32 to match their page."""
    e4b = ROWS["gemma3n-e4b"]
    assert len(e4b["specs"]) == 20 and len(e4b["kv_sharing"]) == 15
    assert {_index(t) for t in e4b["kv_sharing"].values()} == {18, 19}
    g4 = ROWS["gemma4-default"]["planning"][0]
    assert {(x["spec"], x["block_size"]) for x in g4["groups"]} == \
        {("SlidingWindowSpec", 32), ("FullAttentionSpec", 16)}
    assert {s["head_size"] for s in ROWS["gemma4-default"]["specs"]
            if s["type"] == "FullAttentionSpec"} == {512}
    kv1 = ROWS["gemma4-k-eq-v"]["specs"]
    assert {(s["num_kv_heads"], s["head_size"]) for s in kv1 if s["type"] == "FullAttentionSpec"} \
        == {(1, 512)}


def _config(**keys) -> dict:
    return {"architectures": ["Gemma4ForCausalLM"], "model_type": "gemma4_text", **keys}


def test_class_defaults_read_as_the_config_classes() -> None:
    """A config.json that leaves the keys out gets the classes' defaults (E4B's shape)."""
    g = read_hf_config({"architectures": ["Gemma3nForCausalLM"], "model_type": "gemma3n_text"})
    assert g.num_layers == 35 and sum(g.kv_shared) == 15
    assert g.layer_kinds[:5] == ("sliding",) * 4 + ("full",)
    g4 = read_hf_config(_config())
    assert [i for i, k in enumerate(g4.layer_kinds) if k == "full"] == [5, 11, 17, 23, 29]
    assert {g4.layer_dims[i] for i in (5, 11)} == {(4, 512)} and g4.layer_dims[0] == (4, 256)


def test_tensor_parallel_splits_each_layers_heads() -> None:
    g = read_hf_config(ROWS["gemma4-k-eq-v"]["config"])
    specs = layer_specs(g, tp=4)
    assert {(s.num_kv_heads, s.head_size) for s in specs.values()} == {(1, 256), (1, 512)}


@pytest.mark.parametrize(("keys", "field", "text"), [
    ({"num_hidden_layers": 6, "num_kv_shared_layers": 1,
      "layer_types": ["sliding_attention"] * 5 + ["full_attention"]},
     "num_kv_shared_layers", ("layer 5 (full attention) is KV-shared but no unshared layer "
     "before layer 5 is full attention")),
    ({"num_kv_shared_layers": 31}, "num_kv_shared_layers", "31 shared layers of 30"),
    ({"per_layer_config": {"05": {"sliding_window": 8}}}, "per_layer_config",
     ("entry '05': kvcli reads only head_dim, num_key_value_heads per layer, not "
     "'sliding_window'")),
    ({"per_layer_config": {"30": {"head_dim": 8}}}, "per_layer_config",
     "entry '30': expected a layer index below 30"),
    ({"use_bidirectional_attention": "all"}, "use_bidirectional_attention", "'all': every"),
])
def test_refusals_name_the_key(keys: dict, field: str, text: str) -> None:
    with pytest.raises(InputError) as e:
        read_hf_config(_config(**keys), source="config.json")
    assert e.value.field == field and text in str(e.value) and "\n" not in str(e.value)


def test_the_multimodal_classes_are_read_with_their_towers() -> None:
    """Gemma 3n's, Gemma 4's and Gemma 4 Unified's multimodal classes, refused before
    (tests/test_gemma_mm_towers.py checks them against vLLM): a Gemma 4 config without the
    vision_config vLLM reads is refused by that field."""
    for arch, text in (("Gemma4ForConditionalGeneration", "gemma4_text"),
                       ("Gemma4UnifiedForConditionalGeneration", "gemma4_unified_text")):
        with pytest.raises(InputError) as e:
            read_hf_config({"architectures": [arch], "model_type": "gemma4",
                            "text_config": {"model_type": text}})
        assert e.value.field == "vision_config"
    g = read_hf_config({"architectures": ["Gemma3nForConditionalGeneration"],
                        "model_type": "gemma3n", "text_config": {"model_type": "gemma3n_text"}})
    assert [p.total for p in g.vision_parts] == [298_587_456, 684_694_048]
