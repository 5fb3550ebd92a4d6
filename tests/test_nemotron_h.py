"""Nemotron-H (`hybrid_override_pattern`): one mixer a layer, feed-forward layers without KV.

vLLM's own start-up answer for Nemotron Nano 9B v2 is in tests/data/mamba/start_defaults.json
(test_mamba_start_defaults.py compares kvcli's groups, block sizes and pages to it). Before
Nemotron-H was read, kvcli sized its 56 layers as 56 full-attention layers.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models import load_hf_config, read_hf_config
from kvcore.models.weights import estimate_params

CONFIG = Path(__file__).resolve().parent / "data" / "mamba" / "nemotron-nano-9b-v2.config.json"
runner = CliRunner()


def test_layers_follow_the_pattern() -> None:
    g = read_hf_config(load_hf_config(CONFIG))
    assert Counter(g.layer_kinds) == {"mamba": 27, "mlp": 25, "full": 4}
    assert [i for i, k in enumerate(g.layer_kinds) if k == "full"] == [14, 21, 30, 39]
    # 8.89 B parameters, as published: mixers and squared-ReLU feed-forward layers, one each
    assert sum(estimate_params(g)) == 8_888_227_328


def test_layer_list_form_and_ssm_dtype() -> None:
    cfg = load_hf_config(CONFIG)
    pattern = cfg.pop("hybrid_override_pattern")
    names = {"M": "linear_attention", "*": "full_attention", "-": "mlp", "E": "moe"}
    listed = read_hf_config({**cfg, "layers_block_type": [names[ch] for ch in pattern]})
    assert listed.layer_kinds == read_hf_config(load_hf_config(CONFIG)).layer_kinds
    assert listed.mamba is not None and listed.mamba.ssm_dtype == "float32"
    bf16 = read_hf_config({**cfg, "hybrid_override_pattern": pattern,
                           "mamba_ssm_cache_dtype": "bfloat16"})
    assert bf16.mamba is not None and bf16.mamba.ssm_dtype == "bfloat16"


@pytest.mark.parametrize("change", [{"hybrid_override_pattern": "M*X"},
                                    {"hybrid_override_pattern": None}])
def test_bad_pattern_is_one_error(change) -> None:
    with pytest.raises(InputError) as e:
        read_hf_config({**load_hf_config(CONFIG), **change}, source="c.json")
    assert e.value.field == "hybrid_override_pattern"


def test_config_cli_layer_kinds() -> None:
    r = runner.invoke(app, ["config", "--model-config", str(CONFIG), "--num-blocks", "100",
                            "--max-model-len", "8192", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["layer_kinds"] == {"mamba": 27, "mlp": 25, "full": 4}
    assert sum(g["num_layers"] for g in d["groups"]) == 31


@pytest.mark.parametrize("change", [{"hybrid_override_pattern": "--E-"}])
def test_a_model_with_no_layer_that_keeps_a_cache_is_refused(change) -> None:
    """Only MLP / MoE layers: no layer keeps a KV cache or a state, so the pool's per-request
    need was 0 and sizing divided by it (an OverflowError traceback from config and replay)."""
    key = next(iter(change))
    cfg = {k: v for k, v in load_hf_config(CONFIG).items() if k != "hybrid_override_pattern"}
    r = runner.invoke(app, ["config", "--model-config", "-", "--gpu-memory-gib", "80"],
                      input=json.dumps({**cfg, **change}))
    assert r.exit_code == 2
    assert r.stderr == (f"error: -: field '{key}': no Mamba (M) or attention (*) layer: no "
                        "layer keeps a KV cache or a state for kvcli to replay\n")
