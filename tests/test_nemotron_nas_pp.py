"""Nemotron-NAS on pipeline stages against vLLM 0.33's DeciLMForCausalLM built a stage at a time
(tests/data/nemotron_nas/answers_pp.json: TP 1 and 2, PP 2 and 4): each stage's layers (no-op
layers counted as vLLM counts them), weights, buffers and KV cache layers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.models import read_hf_config
from kvcore.models.weights import estimate_weights_bytes
from kvcore.models.worker_specs import decoder_layer_of, layer_specs
from kvcore.sizing.buffers_term import buffer_bytes
from kvcore.sizing.pipeline import stage_ranges

DATA = Path(__file__).parent / "data" / "nemotron_nas"
STAGES = json.loads((DATA / "answers_pp.json").read_text())
ROWS = [(n, key, i) for n, keys in STAGES.items() for key, stages in keys.items()
        for i in range(len(stages))]


def test_what_was_recorded() -> None:
    assert list(STAGES) == ["tiny-nas-a", "tiny-nas-b", "super-49b-v1_5"]
    assert len(ROWS) == 3 * 2 * (2 + 4)


@pytest.mark.parametrize(("name", "key", "stage"), ROWS)
def test_stage_is_vllms(name: str, key: str, stage: int) -> None:
    rec = STAGES[name][key][stage]
    g = read_hf_config(json.loads((DATA / f"{name}.config.json").read_text()))
    tp, pp = int(key[2]), int(key.split("pp")[1])
    r = stage_ranges(g.num_layers, pp)[stage]
    first, last = stage == 0, stage == pp - 1
    assert [r.start, r.stop] == rec["layers"]
    assert estimate_weights_bytes(g, tp, (r, first, last)) \
        == sum(rec["param_bytes_by_dtype"].values())
    assert buffer_bytes(g, tp, None, 4096, r, first, last) \
        == sum(rec["buffer_bytes_by_dtype"].values())
    mine = [n for n in layer_specs(g, tp=tp) if decoder_layer_of(n, g.num_layers) in r]
    assert [f"model.{n}.self_attn.attn" for n in mine] == rec["kv_layers"]


def test_super_pp2_blocks_are_its_fuller_stage() -> None:
    """Super at TP 2, PP 2 on 80 GiB: stage 0 holds 37 of the 49 attention layers and the
    embedding; its pool (37 x 32,768 bytes a block) is the smaller."""
    rec = STAGES["super-49b-v1_5"]["tp2-pp2"]
    assert [len(s["kv_layers"]) for s in rec] == [37, 12]
    r = CliRunner().invoke(app, ["config", "--model-config",
                                 str(DATA / "super-49b-v1_5.config.json"), "--gpu-memory-gib",
                                 "80", "--tensor-parallel-size", "2",
                                 "--pipeline-parallel-size", "2", "--json"])
    d = json.loads(r.stdout)
    weights = sum(rec[0]["param_bytes_by_dtype"].values())
    buffers = sum(rec[0]["buffer_bytes_by_dtype"].values())
    available = int(80 * (1 << 30) * 0.92) - weights - buffers
    assert d["num_blocks"] == available // (37 * 32_768) == 37_520
