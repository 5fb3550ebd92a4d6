"""A layer's own query heads split over the TP ranks, or vLLM refuses to build it: Laguna's
``num_attention_heads_per_layer`` and Step-3.5's sliding layers' count, which the top-level
count ModelConfig checks does not speak for. Their attention asserts it bare, so vLLM's words
are an empty AssertionError (tests/data/weights_census/layer_heads_tp/ and mm_step3/step3p5/:
16 heads on the full layers, 12 on layer 1, 2 KV heads; built at TP 1, 2 and 4, refused at 8,
which kvcli sized)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

DATA = Path(__file__).parent / "data" / "weights_census"
CASES = {"laguna": DATA / "layer_heads_tp" / "tiny-laguna-heads",
         "step3p5": DATA / "mm_step3" / "step3p5" / "tiny-step3p5-swa-heads"}
KEYS = {"laguna": "num_attention_heads_per_layer", "step3p5": "a sliding layer's own count"}


def _recorded(base: Path) -> dict:
    answers = json.loads((base.parent / "answers.json").read_text())["cases"]
    return answers[base.name]["tp"]


@pytest.mark.parametrize("family", sorted(CASES))
@pytest.mark.parametrize("tp", ["1", "2", "4", "8"])
def test_refused_where_vllm_refused(family: str, tp: str) -> None:
    ranks = _recorded(CASES[family])[tp]
    r = CliRunner().invoke(app, ["config", "--model-config", f"{CASES[family]}.config.json",
                                 "--gpu-memory-gib", "1", "--tensor-parallel-size", tp])
    if "refused" not in ranks[0]:
        assert r.exit_code == 0, r.output
        return
    assert ranks[0]["refused"] == "AssertionError: "
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines()[-1] == (
        f"error: option --tensor-parallel-size: {family}'s layer 1 has 12 attention heads "
        f"({KEYS[family]}), which do not split over the ranks, and vLLM refuses to build it (a "
        "bare AssertionError: its attention asserts total_num_heads % tp_size == 0); got 8")


def test_only_tp_8_was_refused() -> None:
    for base in CASES.values():
        assert [tp for tp, ranks in _recorded(base).items() if "refused" in ranks[0]] == ["8"]


@pytest.mark.parametrize("family", ["laguna", "step3p5"])
def test_more_ranks_than_experts_are_refused_in_vllms_words(family: str) -> None:
    """4 experts at TP 8 (every layer's heads 16): their MoE blocks raise it as they are built
    (laguna.py, step3p5.py), as Qwen3-MoE's do; kvcli sized it before. TP 1, 2, 4 built."""
    base = DATA / "layer_heads_tp" / f"tiny-{family}-few-experts"
    recorded = _recorded(base)
    assert [tp for tp, ranks in recorded.items() if "refused" in ranks[0]] == ["8"]
    why = recorded["8"][0]["refused"].removeprefix("ValueError: ")
    r = CliRunner().invoke(app, ["config", "--model-config", f"{base}.config.json",
                                 "--gpu-memory-gib", "1", "--tensor-parallel-size", "8"])
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines()[-1] == (
        f"error: option --tensor-parallel-size: {family} has 4 experts, fewer than the tensor "
        f"parallel ranks, and vLLM refuses to build it: '{why}'; got 8")
