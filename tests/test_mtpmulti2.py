"""Qwen3-Next's and the DeepSeek-style classes' several MTP modules (num_nextn_predict_layers
n > 1) against vLLM 0.33.0 (tests/data/weights_census/mtpmulti2/: the groups at K 1 and
SpeculativeConfig's answer at K 1..6; the draft's bytes on every rank: ../drafts_answers.json,
compared by tests/test_draft_census.py).

Before, kvcli refused each of them whatever K (DeepSeek-V3's, GLM-4.5's and Step-3.5's were
sized at K 1: tests/test_mtpmulti.py). vLLM builds the n modules whatever K and at K 1 runs one
a step (single-module scheduling): Qwen3-Next's n full-attention decoder layers behind its one
fc (module i built as layer i, MoE where the target's layer i is), DeepSeek-V3.2's, GLM-5's,
GLM-4.7-Flash's and openPangu's n whole modules; each module's cache joins the target's group.
K >= 2 is vLLM's multi-module MTP, still refused; K above n not a multiple of it in vLLM's words.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.clock.draft_passes import DraftPasses
from kvcore.clock.gpus import find_gpu
from kvcore.clock.roofline import RooflineClock
from kvcore.models.drafts import load_spec_draft
from kvcore.models.hf_config import read_hf_config
from kvcore.models.mtp_draft import reuse_warning
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.mtp_k_rules import assert_k_rule

DATA = Path(__file__).parent / "data" / "weights_census"
HERE = DATA / "mtpmulti2"
SPECS = json.loads((HERE / "specs_answers.json").read_text())["cases"]
K_RULES = json.loads((HERE / "k_rules.json").read_text())["cases"]


def _config(case: str) -> Path:
    return DATA / "drafts" / case / "config.json"


def _target(case: str):
    return read_hf_config(json.loads(_config(case).read_text()), name="t")


def _theirs(rec: dict) -> list:
    """vLLM's groups: (layers, spec, page bytes, draft layers), from either recorder's form."""
    return [(g["num_layers"], g["spec"]["type"], g["spec"]["page_size_bytes"],
             len(g["draft_layers"])) if "spec" in g else
            (len(g["layers"]), g["spec_type"], g["page_size_bytes"], len(g["draft_layers"]))
            for g in rec["kv_cache_groups"]]


def _ours(case: str, rec: dict) -> list:
    block = rec["kv_cache_groups"][-1].get("block_size") or rec["kv_cache_groups"][-1]["spec"][
        "block_size"]
    res = resolve_kv_cache_config(model_config=str(_config(case)), num_blocks=2000,
                                  block_size=block, max_model_len=4096, draft=(None, "mtp"),
                                  num_speculative_tokens=1)
    return [(len(g.layer_names), type(g.kv_cache_spec).__name__, g.kv_cache_spec.page_size_bytes,
             sum(n.startswith("draft.") for n in g.layer_names))
            for g in res.config.kv_cache_groups]


@pytest.mark.parametrize("case", sorted(SPECS))
def test_the_groups_at_k1_equal_vllms(case: str) -> None:
    rec = SPECS[case]
    assert rec["num_speculative_tokens"] == 1 and not rec["draft"]["use_multi_module_mtp"]
    assert _ours(case, rec) == _theirs(rec)


@pytest.mark.parametrize(("case", "k"), [(c, int(k)) for c in K_RULES for k in K_RULES[c]])
def test_num_speculative_tokens_as_vllm_takes_it(case: str, k: int) -> None:
    """K 1: built (kvcli sizes it); K above n not a multiple of n: vLLM's refusal, its words;
    multi-module MTP (K >= 2): refused, saying so; vLLM's warning where it logs it."""
    rec = K_RULES[case][str(k)]
    target = _target(case)
    assert_k_rule(rec, target, k)
    if "refused" not in rec and not rec["use_multi_module_mtp"]:
        assert rec["n_predict"] == target.mtp_layers
    arch = load_spec_draft(None, "mtp", target, 1).architecture
    assert [w for w in [reuse_warning(arch, k)] if w] == rec["warnings"]


def test_the_recorded_numbers() -> None:
    """Qwen3-Next's tiny at 3 modules with decoder_sparse_step 2: modules 0 and 2 dense, 1 MoE
    (374,912 B at TP 1: the fc and norms 16,768, the MoE layer 128,000, each dense one
    115,072); its 80B at 2 modules: 12 + 2 full-attention layers in one group, the 36 Gated
    DeltaNet layers in groups of 14 padded slots; DeepSeek-V3.2's 2 modules 2 x 23,248,056,320
    B at TP 1 (6,280,077,312 a rank at TP 8)."""
    d = load_spec_draft(None, "mtp", _target("tiny-qwen3-next-3mtp-sparse2"))
    assert (d.geometry.moe_layers, d.weights_bytes(1)) == ((False, True, False), 374_912)
    big = SPECS["qwen3-next-80b-a3b-2mtp"]
    assert _theirs(big)[-1] == (14, "FullAttentionSpec", big["kv_cache_groups"][-1][
        "page_size_bytes"], 2)
    v32 = load_spec_draft(None, "mtp", _target("deepseek-v3.2-2mtp"))
    assert [v32.weights_bytes(tp) for tp in (1, 8)] == [2 * 23_248_056_320, 6_280_077_312]


def test_the_drafters_pass_runs_one_module() -> None:
    """At K 1 the one pass runs module 0 (vLLM's spec_step_idx % n): the clock times one layer,
    as for the one-module target, not the n layers the pool holds."""
    one = read_hf_config(json.loads((DATA.parent / "mtp_draft" / "4-tiny-qwen3-next" / "target"
                                     / "config.json").read_text()), name="t")
    two = _target("tiny-qwen3-next-2mtp")
    gpu = find_gpu("h200")
    passes = [DraftPasses(load_spec_draft(None, "mtp", t, 1), 1, RooflineClock(t, gpu, tp=1))
              for t in (one, two)]
    assert [p.clock.g.layer_kinds for p in passes] == [("full",), ("full",)]
    from kvcore.clock.batch import StepBatch

    batch = StepBatch()
    batch.add(1, 2000, False, 32)
    assert passes[0].gpu_ms(batch) == passes[1].gpu_ms(batch)
