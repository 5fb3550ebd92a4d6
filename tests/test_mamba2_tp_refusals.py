"""vLLM 0.33's MambaMixer2 refuses a tensor-parallel size that does not divide its heads, or its
groups (unless one): for every Mamba2 model, attention-free or hybrid, in that order; a hidden
size TP does not divide builds (tests/data/mamba_only/tp_refusals: vLLM's builds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.sizing import resolve_kv_cache_config

HERE = Path(__file__).parent / "data" / "mamba_only" / "tp_refusals"
ANSWERS = json.loads((HERE / "answers.json").read_text())["cases"]
CASES = [(name, int(tp), want) for name, row in ANSWERS.items() for tp, want in row.items()]


@pytest.mark.parametrize(("name", "tp", "want"), CASES,
                         ids=[f"{n.split('.')[0]}-tp{t}" for n, t, _ in CASES])
def test_kvcli_refuses_where_vllm_refuses(name, tp, want) -> None:
    def size():
        return resolve_kv_cache_config(model_config=str(HERE / name), num_blocks=100, max_model_len=256,
                                       tensor_parallel_size=tp)
    if want == "built":
        assert size().config.num_blocks == 100
        return
    with pytest.raises(InputError) as e:
        size()
    assert e.value.field == "tensor_parallel_size"
    assert want.removeprefix("AssertionError: ") in str(e.value)
    assert "Mamba2 layers do not split over it" in str(e.value)


def test_the_cases_cover_each_outcome() -> None:
    outcomes = {w for _, _, w in CASES}
    assert "built" in outcomes and sum(w != "built" for _, _, w in CASES) == 4
    # (the hidden size TP 2 does not divide: built by vLLM, refused by kvcli before)
    assert ANSWERS["mamba2-odd-hidden.config.json"]["2"] == "built"
