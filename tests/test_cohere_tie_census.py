"""Cohere's text classes (Command-R's CohereForCausalLM, Cohere2ForCausalLM, Cohere2MoeForCausalLM)
against vLLM 0.33.0's builds on the meta device (tests/data/weights_census/cohere_tie/, TP 1,
2 and 4, every rank): commandr.py and cohere2_moe.py compute the logits from the embedding and
build no lm_head, whatever ``tie_word_embeddings`` says; one LayerNorm a layer (attention and
MLP in parallel); Command R+'s q / k norms a head's width each head on the rank."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_weights_bytes
from tests.census_rows import built_ranks

HERE = Path(__file__).parent / "data" / "weights_census" / "cohere_tie"
CASES = {n.split("/")[-1].removesuffix(".config.json"): c
         for n, c in json.loads((HERE / "answers.json").read_text())["cases"].items()}


def _read(name: str):
    return read_hf_config(json.loads((HERE / f"{name}.config.json").read_text()), name=name)


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES))
def test_each_rank_is_vllms_bytes(name: str, tp: int, rank: int) -> None:
    rec = CASES[name]["tp"][str(tp)][rank]
    assert "lm_head.weight" not in rec.get("param_numel_by_name", {})
    assert estimate_weights_bytes(_read(name), tp) == sum(rec["param_bytes_by_dtype"].values())


def test_the_census_holds_what_was_drawn() -> None:
    assert (len(CASES), len(built_ranks(CASES))) == (12, 84)


def test_an_untied_flag_still_ties() -> None:
    # (the untied config as vLLM builds it: 136,849,408 B at TP 1, where kvcli had added a
    # 32,000 x 1,024 head and a second norm a layer: 202,393,600)
    for model in ("cohere", "cohere2", "cohere2-moe"):
        g = _read(f"{model}-untied")
        assert g.tie_word_embeddings
        assert estimate_weights_bytes(g, 1) == estimate_weights_bytes(_read(f"{model}-tied"), 1)
    assert estimate_weights_bytes(_read("cohere-untied"), 1) == 136_849_408
    # (Command R+'s q_norm 8 heads x 128, k_norm 2 x 128, a layer: 4 layers, bfloat16)
    assert estimate_weights_bytes(_read("cohere-qk-norm-untied"), 1) == (
        136_849_408 + 4 * (8 + 2) * 128 * 2)
