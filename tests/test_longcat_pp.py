"""LongCat-Flash on pipeline stages against vLLM 0.33.0's own build of each stage
(tests/data/weights_census/longcat_pp/answers.json, record_longcat_pp.py: 5 decoder layers at
PP 2, 3 and 5, TP 1).

Before, kvcli refused it ("not modelled"). vLLM splits the ``num_layers`` decoder layers
(`get_pp_indices`: 3 + 2 at PP 2), two MLA attentions each, the embedding on the first stage,
the final norm and the LM head on the last, a RoPE cache on every stage.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.models import load_hf_config, read_hf_config
from kvcore.models.longcat import decoder_ranges
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.buffers_term import buffer_bytes
from kvcore.sizing.pipeline import stage_ranges

DATA = Path(__file__).parent / "data" / "weights_census" / "longcat_pp"
CONFIG = DATA / "longcat-flash-l5.config.json"
STAGES = json.loads((DATA / "answers.json").read_text())["pp"]
CASES = [(int(pp), k) for pp, stages in STAGES.items() for k in range(len(stages))]


@pytest.mark.parametrize(("pp", "stage"), CASES)
def test_each_stage_is_vllms_bytes(pp: int, stage: int) -> None:
    rec = STAGES[str(pp)][stage]
    g = read_hf_config(load_hf_config(CONFIG))
    ranges = decoder_ranges(stage_ranges(5, pp))
    layers, first, last = ranges[stage], stage == 0, stage == pp - 1
    assert (layers.start // 2, layers.stop // 2) == tuple(rec["layers"])
    assert estimate_weights_bytes(g, 1, (layers, first, last)) \
        == sum(rec["param_bytes_by_dtype"].values())
    assert buffer_bytes(g, 1, None, 4096, layers, first, last) == sum(
        sum(b.values()) for b in rec["buffer_bytes_by_dtype"].values())


def test_the_recorded_numbers() -> None:
    """PP 5: a middle stage 967,335,936 bytes; the first the embedding's 131,072,000 more (32,000
    x 2,048 in bf16), the last the LM head's and the final norm's 4,096 too."""
    stages = STAGES["5"]
    assert [sum(s["param_bytes_by_dtype"].values()) - 786_816 for s in stages] == [
        1_098_407_936, 967_335_936, 967_335_936, 967_335_936, 1_098_412_032]
    assert len(CASES) == 10


def _config(*args: str):
    return CliRunner().invoke(app, ["config", "--model-config", str(CONFIG), "--max-model-len",
                                    "4096", "--block-size", "16", *args])


def test_config_plans_each_stage_of_decoder_layers() -> None:
    """Each stage's KV cache holds its decoder layers' two MLA caches (18,432 B a page)."""
    r = _config("--gpu-memory-gib", "10", "--pipeline-parallel-size", "3", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert [(s["layers"], s["bytes_per_block"]) for s in out["stages"]] == [
        ([0, 3], 4 * 18_432), ([4, 7], 4 * 18_432), ([8, 9], 2 * 18_432)]


def test_more_stages_than_decoder_layers_is_refused() -> None:
    r = _config("--num-blocks", "100", "--pipeline-parallel-size", "6")
    assert r.exit_code == 2
    assert r.output.strip().splitlines()[-1] == (
        "error: option --pipeline-parallel-size: longcat_flash has 5 decoder layers, fewer "
        "than 6 stages")
