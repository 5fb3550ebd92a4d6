"""LongCat-Flash's and openPangu Ultra MoE's MTP drafts (method "mtp") against vLLM 0.33.0's
own LongCatFlashMTP and OpenPanguMTP (tests/data/weights_census/mtp3/specs_answers.json: the
draft's class and KV specs, the groups with the target's; drafts_answers.json: the draft's own
bytes on every rank, compared for every rank by tests/test_draft_census.py).

Before, kvcli refused method mtp for both ("kvcli does not model" their modules). vLLM:
LongCat's module is ONE DeepSeek-V2 decoder layer with a dense MLP ``ffn_hidden_size`` wide
(n_routed_experts cleared), a replicated eh_proj, three norms, its MLA cache joining the
target's group (4 + 1 layers for 2 LongCat decoder layers); openPangu's is DeepSeek's shape
around an openPangu layer (sandwich norms, the router's bias).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.drafts import load_spec_draft
from kvcore.models.hf_config import read_hf_config
from kvcore.sizing.resolve import resolve_kv_cache_config

DATA = Path(__file__).parent / "data" / "weights_census"
SPECS = json.loads((DATA / "mtp3" / "specs_answers.json").read_text())["cases"]
CONFIGS = {"longcat-flash-l2": DATA / "longcat" / "longcat-flash-l2.config.json",
           "longcat-flash-other": DATA / "longcat" / "longcat-flash-other.config.json",
           "tiny-pangu-ultra-moe": DATA / "openpangu" / "tiny-pangu-ultra-moe.config.json",
           "tiny-pangu-ultra-moe-no-q-lora":
               DATA / "openpangu" / "tiny-pangu-ultra-moe-no-q-lora.config.json"}


def _target(name: str):
    return read_hf_config(json.loads(CONFIGS[name].read_text()), name=name)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_groups_with_the_draft_equal_vllms(name: str) -> None:
    rec = SPECS[name]
    res = resolve_kv_cache_config(model_config=str(CONFIGS[name]), num_blocks=100,
                                  block_size=16, max_model_len=1024, draft=(None, "mtp"),
                                  num_speculative_tokens=1)
    ours = [(len(g.layer_names), type(g.kv_cache_spec).__name__, g.kv_cache_spec.block_size,
             g.kv_cache_spec.page_size_bytes, sum(n.startswith("draft.") for n in g.layer_names))
            for g in res.config.kv_cache_groups]
    assert ours == [(g["num_layers"], g["spec"]["type"], g["spec"]["block_size"],
                     g["spec"]["page_size_bytes"], len(g["draft_layers"]))
                    for g in rec["kv_cache_groups"]]
    assert res.draft is not None and res.draft.architecture == rec["draft"]["class"]
    (draft_spec,) = rec["kv_specs"].values()
    assert (draft_spec["head_size"], draft_spec["dtype"]) == (
        (576, "bfloat16") if name.startswith("longcat") else (40, "float16"))


def test_the_recorded_numbers() -> None:
    """LongCat-Flash at 2 decoder layers: 4 MLA caches and the module's, one group of 5 pages
    of 18,432 bytes; the module's own bytes a rank (TP 1, 2, 4, 8), exact; openPangu's tiny."""
    assert SPECS["longcat-flash-l2"]["kv_cache_groups"][0]["num_layers"] == 5
    longcat = load_spec_draft(None, "mtp", _target("longcat-flash-l2"))
    assert [longcat.weights_bytes(tp) for tp in (1, 2, 4, 8)] == [
        785_186_816, 481_099_776, 329_056_256, 253_034_496]
    pangu = load_spec_draft(None, "mtp", _target("tiny-pangu-ultra-moe"))
    assert [pangu.weights_bytes(tp) for tp in (1, 2, 4)] == [116_272, 72_752, 50_992]


def test_an_openpangu_config_without_its_mtp_key_has_no_module() -> None:
    """vLLM's OpenPanguMultiTokenPredictor reads num_nextn_predict_layers (the checkpoints'
    remote class, read as given): without it, no module, refused as DeepSeek's 0 is."""
    cfg = json.loads(CONFIGS["tiny-pangu-ultra-moe"].read_text())
    del cfg["num_nextn_predict_layers"]
    with pytest.raises(InputError) as e:
        load_spec_draft(None, "mtp", read_hf_config(cfg, name="t"))
    assert (e.value.field, e.value.message) == (
        "spec_method", "mtp with t: it has no MTP module (num_nextn_predict_layers 0)")
