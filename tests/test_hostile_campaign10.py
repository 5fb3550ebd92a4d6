"""A tenth hostile campaign, over the readers added the day it ran (ERNIE-4.5 MoE / -VL, Keye,
Molmo, Nemotron Nano VL V2's RADIO, Step-3 / Step-3.5, GLM-4V's EVA, MiniCPM-o, Voxtral,
Intern-S1-Pro's FoPE, the quantised StarCoder / GPT-NeoX / Phi-2 lists, the MTP drafts):
valid configs mutated by tests/data/hostile_configs/mutate_configs.py under KVMUT_SET=10 and
probed key by key (their README: how many drawn, found, fixed). Each finding is kept as the one
edit of a tests/data config that shows it (the draw that found it in the comment,
``seed:index``; "probe" for a hand-written edit, "lie" for a wrong value sized without a word):
`kvcli config` refuses it in one line naming the file and the key, exit code 2."""

from __future__ import annotations

import json

import pytest
from hostile_edits import (
    POOL,
    at,
    config_refuses,
    mutated,
    replay_refuses,
    sized_report,
    sized_the_same,
    top,
)
from test_hostile_options import runner

from kvcli.app import app

WC = "weights_census/"
ERNIE = WC + "mm_ernie/ernie-4.5-21b-a3b-pt.config.json"
ERNIE_VL = WC + "mm_ernie/ernie-4.5-vl-28b-a3b-pt.config.json"
SPLIT = WC + "mm_ernie/tiny-ernie-vl-split-experts.config.json"
MOLMO = WC + "mm_nemo/molmo-7b-d-0924.config.json"
RADIO = WC + "mm_nemo/tiny-radio-small-one-cls.config.json"
STEP3P5 = WC + "mm_step3/step3p5/step3p5-hub.config.json"
COHERE2_MOE = WC + "cohere_tie/cohere2-moe-tie-absent.config.json"

CASES = [
    # 101:1065: ERNIE-VL's moe_num_shared_experts NaN multiplied a width, int() failed
    # (ValueError); probe: "x" / [1] (TypeError)
    (SPLIT, top("moe_num_shared_experts", float("nan")), "moe_num_shared_experts",
     "expected an integer, got nan"),
    (ERNIE, top("moe_num_shared_experts", "x"), "moe_num_shared_experts",
     "expected an integer, got 'x'"),
    # lies (probe): 1.5 sized a shared MLP 1.5 experts wide; a negative vision expert width
    # sized a negative MLP
    (ERNIE, top("moe_num_shared_experts", 1.5), "moe_num_shared_experts",
     "expected an integer, got 1.5"),
    # lie (quiet_lies over 102:696): [] read as none (vLLM's `[] > 0` is a TypeError)
    (ERNIE, top("moe_num_shared_experts", []), "moe_num_shared_experts",
     "expected an integer, got []"),
    (ERNIE_VL, top("moe_intermediate_size", [1536, -512]), "moe_intermediate_size",
     "expected a list of two integers >= 0 (text, vision), got [1536, -512]"),
    # probe: a wrong-typed embedding_size was named 'vocab_size'
    (MOLMO, top("embedding_size", "x"), "embedding_size", "expected an integer >= 1, got 'x'"),
    # probe: an args that is no object was named 'vision_config.args.model: None'
    (RADIO, at("vision_config", "args", value="x"), "vision_config.args",
     "must be an object, got 'x': vLLM's RADIO tower reads its model and teachers from it"),
    # lie (probe): a setting vLLM's .get fails on was sized with the full layers' heads
    (STEP3P5, top("attention_other_setting", "x"), "attention_other_setting",
     "must be an object, got 'x': vLLM's step3p5.py reads the sliding layers' heads from it"),
    # lie (probe): 0 heads fell back to num_attention_heads; "x" was named
    # 'num_sliding_attention_heads', a key the file does not hold
    (STEP3P5, at("attention_other_setting", "num_attention_heads", value=0),
     "attention_other_setting.num_attention_heads", "expected an integer >= 1, got 0"),
    # probe: "x" left the hub's lists uncut, refused as 'layer_types' (transformers'
    # Step3p7TextConfig adds it to num_hidden_layers: a TypeError there)
    (STEP3P5, top("num_nextn_predict_layers", "x"), "num_nextn_predict_layers",
     "expected a non-negative integer below 2^63, got 'x'"),
    # lie (quiet_lies over 101:1121): Cohere2-MoE's pattern was never read (every layer slid)
    (COHERE2_MOE, top("sliding_window_pattern", [1]), "sliding_window_pattern",
     "expected an integer >= 1, got [1]"),
]


@pytest.mark.parametrize("base, edit, field, message", CASES)
def test_a_finding_is_refused_in_one_line(tmp_path, base, edit, field, message):
    config_refuses(tmp_path, base, edit, field, message)


@pytest.mark.parametrize("base, edit, field, message", CASES[:2])
def test_replay_refuses_a_finding_the_same(tmp_path, base, edit, field, message):
    replay_refuses(tmp_path, base, edit, field, message)


def test_step3p5_reads_the_other_setting_only_for_sliding_attention(tmp_path):
    # (lie, probe: an attention_type other than sliding_attention still gave its 96 heads;
    # vLLM's _get_num_attention_heads then takes num_attention_heads, 64)
    def typed(cfg):
        cfg["attention_other_setting"]["attention_type"] = "x"

    def as_full(cfg):
        cfg["attention_other_setting"]["num_attention_heads"] = cfg["num_attention_heads"]
    sized_the_same(tmp_path, STEP3P5, typed, as_full)


def test_ernie_negative_shared_experts_build_none(tmp_path):
    # (vLLM builds the shared experts where moe_num_shared_experts > 0: -1 sized a negative
    # MLP before)
    sized_the_same(tmp_path, ERNIE, top("moe_num_shared_experts", -1),
          top("moe_num_shared_experts", 0))


@pytest.mark.parametrize("base, edit", [
    # a sample of the draws that passed before and after (seed 101)
    (ERNIE, top("moe_layer_end_index", 1000)),            # (past the last layer: the last)
    (MOLMO, top("embedding_size", None)),                  # (vLLM's `or vocab_size`)
    (STEP3P5, top("moe_layers_enum", "3,4,1000")),         # (an index no layer has: none)
    (WC + "mm_step3/step3p5/step3p5-swa.config.json",       # (its sliding heads given)
     top("attention_other_setting", "x")),
])
def test_a_valid_edit_still_sizes(tmp_path, base, edit):
    assert sized_report(mutated(tmp_path, base, edit))["num_blocks"] > 0


def _kinds(path: str) -> list[tuple[str, list[str]]]:
    res = runner.invoke(app, ["config", "--model-config", path, *POOL, "--json"])
    assert res.exit_code == 0, res.output
    return [(g["kind"], g["layers"]) for g in json.loads(res.stdout)["groups"]]


@pytest.mark.parametrize("edit, full", [
    # transformers 5.20.2's Cohere2MoeConfig(**config).layer_types where the file lists none
    # (vLLM's cohere2_moe.py reads them): every 4th full; 6 layers, the first dense and full
    (lambda cfg: None, ["layers.3"]),
    (lambda cfg: cfg.update(first_k_dense_replace=1, num_hidden_layers=6),
     ["layers.0", "layers.4"]),
])
def test_cohere2_moe_without_layer_types_takes_its_config_class_pattern(tmp_path, edit, full):
    # (lie, quiet_lies 101:1121: every layer slid, whatever sliding_window_pattern said)
    kinds = _kinds(mutated(tmp_path, COHERE2_MOE, edit))
    assert [layers for kind, layers in kinds if kind == "full"] == [full]
