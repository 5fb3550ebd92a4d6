"""kvcli's tied or untied LM head for every multimodal class it reads, against vLLM 0.33.0's
own classes built at TP 1 and 2 (tests/data/weights_census/mm_tie/answers.json, recorded by
record_tie.py there) with the wrapper's and the text config's ``tie_word_embeddings`` true,
false or missing (300 cases over 53 configs): the head as vLLM builds it, and the bytes of
every rank exactly where kvcli counts the class's towers (elsewhere the uncounted tower's
bytes, the same in every variant)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_weights_bytes

DATA = Path(__file__).parent / "data" / "weights_census" / "mm_tie" / "answers.json"
CASES = {n: c for n, c in json.loads(DATA.read_text())["cases"].items()
         if "refused" not in c and "refused" not in c["tp"]["1"][0]}


def _vllm_tied(case: dict) -> bool:
    return not any("lm_head" in n for n in case["tp"]["1"][0]["param_numel_by_name"])


def _gaps(case: dict) -> dict[str, int]:
    g = read_hf_config(case["config"])
    return {tp: estimate_weights_bytes(g, int(tp)) - sum(ranks[0]["param_bytes_by_dtype"].values())
            for tp, ranks in case["tp"].items() if "refused" not in ranks[0]}


def test_recorded() -> None:
    assert len(CASES) == 300


@pytest.mark.parametrize("name", sorted(CASES))
def test_head_tied_as_vllm_builds_it(name: str) -> None:
    assert read_hf_config(CASES[name]["config"]).tie_word_embeddings == _vllm_tied(CASES[name])


def test_bytes_differ_only_by_the_uncounted_towers() -> None:
    """Each class's variants: kvcli's bytes minus vLLM's the same on every rank whatever the
    flags (so the head is counted exactly), and zero for the classes whose towers kvcli counts."""
    gaps: dict[str, set[str]] = defaultdict(set)
    for name, case in CASES.items():
        gaps[name.split()[0]].add(json.dumps(_gaps(case)))
    assert all(len(g) == 1 for g in gaps.values()), {a: g for a, g in gaps.items() if len(g) > 1}
    exact = {a for a, g in gaps.items() if not any(json.loads(g.pop()).values())}
    # (33 of 53 configs; more as kvcli counts more towers)
    assert len(exact) >= 33, sorted(set(gaps) - exact)
