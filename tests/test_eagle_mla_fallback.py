"""vLLM 0.33's full-allocation fallback (`kvcore.sizing.full_allocation`) against vLLM's own
planning (tests/data/eagle_mla_fallback/): DeepSeek-V3 targets beside an EAGLE-3 draft whose
layer is a sliding window. The MLA page (64 tokens x 576 B, tiny: x 80 B) does not divide the
draft's, so vLLM cannot unify the pages; it gives the draft's sliding layer full attention's
memory and puts every layer in one group. kvcli refused the sliding draft before ("kvcli sizes
dense full-attention drafts only") and, without the fallback, would have refused the pages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.group_specs import UniformTypeKVCacheSpecs
from kvcore.models import read_hf_config
from kvcore.models.eagle_draft import draft_layer_specs, load_draft
from kvcore.sizing.full_allocation import full_allocation_groups
from kvcore.sizing.grouping import UnpaddablePageError, get_kv_cache_groups
from kvcore.specs import (
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    MLAAttentionSpec,
    SlidingWindowSpec,
)

DATA = Path(__file__).parent / "data" / "eagle_mla_fallback"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
GiB = 1 << 30
PLANS = [(n, i) for n in sorted(CASES) for i in range(len(CASES[n]["planning"]))]


def _config(name: str, *args: str) -> dict:
    case = DATA / name
    r = CliRunner().invoke(app, [
        "config", "--model-config", str(case / "target" / "config.json"), "--block-size",
        str(CASES[name]["block_size"]), "--max-model-len", str(CASES[name]["max_model_len"]),
        "--speculative-config", json.dumps({"method": "eagle3", "model": str(case / "draft"),
                                            "num_speculative_tokens": 3}), "--json", *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@pytest.mark.parametrize(("name", "index"), PLANS)
def test_groups_and_blocks_are_vllms(name: str, index: int) -> None:
    plan = CASES[name]["planning"][index]
    d = _config(name, "--gpu-memory-gib", repr(plan["available"] / GiB),
                "--gpu-memory-utilization", "1", "--weights-gib", "0")
    assert d["memory"]["available_kv_cache_bytes"] == plan["available"]
    assert [(g["num_layers"], g["block_size"], g["page_size_bytes"]) for g in d["groups"]] == [
        (len(g["layers"]), g["block_size"], g["page_size_bytes"])
        for g in CASES[name]["groups"]]
    assert (d["num_blocks"], d["kv_cache_tokens"], d["num_tensors"]) == (
        plan["num_blocks"], plan["kv_cache_tokens"], len(plan["tensors"]))


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_draft_layers_spec_is_vllms(name: str) -> None:
    """Its window is llama.py's: the config's sliding_window where layer_types says so."""
    case, rec = DATA / name, CASES[name]
    assert rec["unify"].startswith("NotImplementedError: Layer model.layers.0.self_attn.attn: ")
    target = read_hf_config(json.loads((case / "target" / "config.json").read_text()))
    draft = load_draft(str(case / "draft"), "eagle3", target)
    (ours,) = draft_layer_specs(draft, target, block_size=rec["block_size"],
                                max_model_len=rec["max_model_len"]).values()
    theirs = list(rec["specs"].values())[-1]
    assert (type(ours).__name__, getattr(ours, "sliding_window", None), ours.page_size_bytes) == (
        theirs["type"], theirs.get("sliding_window"), theirs["page_size_bytes"])


def _mla_beside(local: SlidingWindowSpec | ChunkedLocalAttentionSpec) -> dict:
    mla = MLAAttentionSpec(64, 1, 40, "bfloat16")        # (5,120 B: not a divisor of 32,768)
    return {"layers.0": mla, "layers.1": mla, "draft.layers.2": local}


def test_the_sliding_layer_takes_full_attentions_memory() -> None:
    groups = get_kv_cache_groups(_mla_beside(SlidingWindowSpec(64, 2, 64, "bfloat16",
                                                               sliding_window=512)))
    assert len(groups) == 1 and groups[0].layer_names == ("layers.0", "layers.1",
                                                          "draft.layers.2")
    uniform = groups[0].kv_cache_spec
    assert isinstance(uniform, UniformTypeKVCacheSpecs)
    draft = uniform.kv_cache_specs["draft.layers.2"]
    assert isinstance(draft, FullAttentionSpec)
    assert (draft.kind, draft.sliding_window, draft.page_size_bytes) == ("full", 512, 32768)
    assert uniform.page_size_bytes == 43008


def test_a_chunked_layer_has_no_fallback() -> None:
    """vLLM's fallback returns None for chunked-local layers: the pages' refusal stands."""
    specs = _mla_beside(ChunkedLocalAttentionSpec(64, 2, 64, "bfloat16",
                                                  attention_chunk_size=512))
    assert full_allocation_groups(specs) is None
    with pytest.raises(UnpaddablePageError, match=r"^Layer layers\.0: page size is not"):
        get_kv_cache_groups(specs)
