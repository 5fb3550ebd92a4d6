"""MTP targets with several modules (num_nextn_predict_layers n > 1) against vLLM 0.33.0
(tests/data/weights_census/mtpmulti/: the groups at K 1 and SpeculativeConfig's answer at
K 1..6; the draft's bytes on every rank: ../drafts_answers.json, compared by
tests/test_draft_census.py; Step-3.5's hub config, 3 modules: ../drafts2/specs_answers.json).

Before, kvcli refused every target with n > 1 whatever K. vLLM builds the n modules, one layer
each, whatever K; at K 1 one module runs a step (single-module scheduling), which kvcli now
sizes for DeepSeek-V3's, GLM-4.5's and Step-3.5's; K above n not a multiple of it is refused
in vLLM's words; K >= 2 is vLLM's multi-module MTP, still refused as not modelled. vLLM warns
of running one layer several times at K > 1 for every MTP draft but Step-3.5's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.models.drafts import load_spec_draft
from kvcore.models.hf_config import read_hf_config
from kvcore.models.mtp_draft import reuse_warning
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.mtp_k_rules import assert_k_rule

DATA = Path(__file__).parent / "data" / "weights_census"
HERE = DATA / "mtpmulti"
SPECS = json.loads((HERE / "specs_answers.json").read_text())["cases"]
K_RULES = json.loads((HERE / "k_rules.json").read_text())["cases"]
STEP = DATA / "mm_step3" / "step3p5" / "step3p5-hub.config.json"
STEP_SPECS = json.loads((DATA / "drafts2" / "specs_answers.json").read_text())["cases"]


def _config(case: str) -> Path:
    return STEP if case == "step3p5-hub" else DATA / "drafts" / case / "config.json"


def _groups(case: str, rec: dict) -> tuple[list, list]:
    res = resolve_kv_cache_config(model_config=str(_config(case)), num_blocks=2000,
                                  block_size=16, max_model_len=1024, draft=(None, "mtp"),
                                  num_speculative_tokens=1)
    ours = [(len(g.layer_names), type(g.kv_cache_spec).__name__, g.kv_cache_spec.page_size_bytes,
             sum(n.startswith("draft.") for n in g.layer_names))
            for g in res.config.kv_cache_groups]
    theirs = [(g["num_layers"], g["spec"]["type"], g["spec"]["page_size_bytes"],
               len(g["draft_layers"])) for g in rec["kv_cache_groups"]]
    return ours, theirs


@pytest.mark.parametrize("case", [*SPECS, "step3p5-hub"])
def test_the_groups_at_k1_equal_vllms(case: str) -> None:
    rec = STEP_SPECS[case] if case == "step3p5-hub" else SPECS[case]
    assert rec["num_speculative_tokens"] == 1 and not rec["draft"]["use_multi_module_mtp"]
    ours, theirs = _groups(case, rec)
    assert ours == theirs


def test_the_recorded_numbers() -> None:
    """DeepSeek-V3's tiny at 3 modules: one MLA group of 2 + 3 layers; Step-3.5's hub config:
    12 full layers, then three sliding groups of 11 + one module each; its 3 modules 3 x one
    module's bytes (31,313,490,816 at TP 1)."""
    assert _groups("tiny-deepseek-v3-3mtp", SPECS["tiny-deepseek-v3-3mtp"])[0] == [
        (5, "MLAAttentionSpec", 1280, 3)]
    assert _groups("step3p5-hub", STEP_SPECS["step3p5-hub"])[0] == [
        (12, "FullAttentionSpec", 65536, 0), *[(12, "SlidingWindowSpec", 65536, 1)] * 3]
    step = load_spec_draft(None, "mtp", read_hf_config(json.loads(STEP.read_text())))
    assert [step.weights_bytes(tp) for tp in (1, 2, 4, 8)] == [
        31_313_490_816, 15_764_550_528, 7_990_080_384, 4_102_845_312]
    held = STEP_SPECS["step3p5-hub"]["after_load_sharing"]["param_bytes_by_dtype_not_the_targets"]
    assert sum(held.values()) == 31_313_490_816


@pytest.mark.parametrize(("case", "k"), [(c, int(k)) for c in K_RULES for k in K_RULES[c]])
def test_num_speculative_tokens_as_vllm_takes_it(case: str, k: int) -> None:
    """K 1: built (kvcli sizes it); K above n not a multiple of n: vLLM's refusal, its words;
    multi-module MTP (K >= 2): refused, saying so; vLLM's warning where it logs it."""
    rec = K_RULES[case][str(k)]
    target = read_hf_config(json.loads(_config(case).read_text()), name="t")
    assert_k_rule(rec, target, k)
    if "refused" in rec:
        return
    draft_class = "Step3p5MTP" if case == "step3p5-hub" else "DeepSeekMTP"
    assert [w for w in [reuse_warning(draft_class, k)] if w] == rec["warnings"]


def test_the_warning_on_stderr() -> None:
    """DeepSeek-V3's one module at K 2 (vLLM's words, its missing space kept); Step-3.5's at
    K 1 sized (was refused: 3 modules) and warned of nothing."""
    said = ("warning: Enabling num_speculative_tokens > 1 will run multiple times of forward "
            "on same MTP layer,which may result in lower acceptance rate")
    args = ["config", "deepseek-v3", "--gpu-memory-gib", "141", "--tensor-parallel-size", "8",
            "--speculative-config"]
    out = CliRunner().invoke(app, [*args, '{"method": "mtp", "num_speculative_tokens": 2}'])
    assert out.exit_code == 0 and out.stderr.splitlines()[0] == said
    out = CliRunner().invoke(app, [*args, '{"method": "mtp", "num_speculative_tokens": 1}'])
    assert out.exit_code == 0 and "MTP layer" not in out.stderr
    out = CliRunner().invoke(app, [
        "config", "--model-config", str(STEP), "--gpu-memory-gib", "80",
        "--tensor-parallel-size", "8", "--speculative-config",
        '{"method": "mtp", "num_speculative_tokens": 1}'])
    assert out.exit_code == 0 and "MTP layer" not in out.stderr
    assert "num_blocks = 258,706 = 25,431,898,342 // 98,304" in out.stdout
