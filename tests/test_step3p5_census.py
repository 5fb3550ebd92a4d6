"""kvcli's Step-3.5 (``Step3p5ForCausalLM``) against vLLM 0.33.0's own class, built on the meta
device (tests/data/weights_census/mm_step3/step3p5/; every rank's bytes are checked by
tests/test_tower_censuses.py): the KV specs of its sliding layers, the parameters kvcli read
wrong (every layer MoE, no shared expert, q/k norms or float32 routers; a hub config's lists
padded with its MTP layers refused), and what vLLM asserts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_params
from tests.kv_census_rows import kvcli_specs, same, vllm_specs

DATA = Path(__file__).parent / "data" / "weights_census" / "mm_step3" / "step3p5"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
KV = json.loads((DATA / "kv_answers.json").read_text())


def _config(base: str) -> dict:
    return json.loads((DATA / f"{base}.config.json").read_text())


@pytest.mark.parametrize("base", sorted(KV))
def test_kv_specs_equal_vllms(base: str) -> None:
    """33 sliding layers (512) and 12 full, 8 KV heads of 128 each."""
    assert [s["type"] for s in KV[base]["specs"]].count("SlidingWindowSpec") == 33
    ours = kvcli_specs(KV[base], "Step3p5ForCausalLM")
    assert not isinstance(ours, InputError), str(ours)
    assert same(ours, vllm_specs(KV[base]))


@pytest.mark.parametrize(("base", "params"), [
    # (kvcli read 208,349,409,280 for the first two: 45 MoE layers, no shared expert)
    ("step3p5-full", 195_832_187_968), ("step3p5-swa", 196_955_606_080),
    ("step3p5-hub", 196_956_130_368)])
def test_parameters_equal_vllms(base: str, params: int) -> None:
    assert CASES[base]["tp"]["1"][0]["param_numel"] == params
    assert estimate_params(read_hf_config(_config(base)))[0] == params


def test_a_hub_configs_padded_lists_are_cut_to_the_layers() -> None:
    """45 layers and 3 MTP layers: layer_types 48 long, moe_layers_enum up to 47."""
    cfg = _config("step3p5-hub")
    assert len(cfg["layer_types"]) == 48
    g = read_hf_config(cfg)
    assert (g.num_layers, sum(g.moe_layers), g.layer_heads[:2]) == (45, 42, (64, 96))
    assert (g.num_kv_heads, g.shared_expert_width, g.head_gate) == (8, 1280, True)


@pytest.mark.parametrize("key", ["need_fp32_gate", "use_moe_router_bias"])
def test_what_vllm_asserts_is_refused(key: str) -> None:
    cfg = _config("step3p5-full")
    cfg[key] = False
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="config.json")
    assert str(e.value) == (f"config.json: field '{key}': expected true, got False: vLLM "
                            "0.33's step3p5.py asserts it")


def test_80_gib_at_tp8() -> None:
    """72,736 blocks before (the weights 12.5B parameters over); the hub config was refused."""
    for base, blocks in (("step3p5-full", "80,973"), ("step3p5-hub", "300,442")):
        out = CliRunner().invoke(app, ["config", "--model-config", str(
            DATA / f"{base}.config.json"), "--gpu-memory-gib", "80", "--tensor-parallel-size",
            "8"])
        assert out.exit_code == 0, out.output
        assert f"num_blocks = {blocks} " in out.output


def test_mtp_with_three_modules_is_refused_as_multi_module() -> None:
    """vLLM 0.33 drafts Step-3.5 with Step3p5MTP (config/speculative.py), the hub config's 3
    modules 3 draft layers (weights_census/drafts2/specs_answers.json: 31,313,490,816 B at TP
    1), multi-module MTP from K 2; kvcli sizes them at K 1 (tests/test_mtpmulti.py) and refuses
    K 2 and up as multi-module MTP, as DeepSeek's."""
    args = ["config", "--model-config", str(DATA / "step3p5-hub.config.json"),
            "--gpu-memory-gib", "80", "--tensor-parallel-size", "8", "--speculative-config"]
    out = CliRunner().invoke(app, [*args, '{"method": "mtp", "num_speculative_tokens": 2}'])
    assert out.exit_code == 2
    assert ("mtp with step3p5: it has 3 MTP modules: vLLM 0.33 builds 3 draft layers and with "
            "K >= 2 runs multi-module MTP (prefill") in out.output
    out = CliRunner().invoke(app, [*args, '{"method": "mtp", "num_speculative_tokens": 1}'])
    assert out.exit_code == 0, out.output
