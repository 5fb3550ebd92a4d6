"""`replay --model-config` of a small Gemma 4 and a small Gemma 3n = vLLM 0.33's schedulers over
the groups vLLM's planner builds for them, step for step with their KV events.

Gemma 4 (tests/data/sched_gemma/gemma4_small.json): 6 layers, 2 of them KV-shared (no cache,
no group), a 512-wide full layer beside 256-wide sliding ones, so vLLM's planner raises the
sliding layers' block to 32 (one page size) and keeps the full one at 16: 3 sliding groups at
32 and a full group at 16. Gemma 3n (gemma3n_small.json): the same layer types, its 2 shared
layers reading layers 3 and 4's caches, every block 16. The answers come from
tests/data/sched_gemma/make_gemma.py (the groups: vLLM's `get_kv_cache_groups`) and
../sched_chunked_mixed/oracle_chunked_mixed.py (the folder's README).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import answer_of, check_model_case, config_groups

DATA = Path(__file__).resolve().parent / "data" / "sched_gemma"
CASES = sorted(DATA.glob("*.trace.jsonl"))
MODELS = {"g4": DATA / "gemma4_small.json", "g3n": DATA / "gemma3n_small.json"}


def _model(trace: Path) -> Path:
    return MODELS[trace.name.split("_")[0]]



@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_gemma_case(trace: Path, tmp_path: Path):
    check_model_case(trace, _model(trace), tmp_path)


def test_the_groups_and_cases():
    """Gemma 4's sliding layers at block 32 beside its 512-wide full layer at 16; Gemma 3n's
    four caches for six layers at 16."""
    sliding = {"type": "sliding_window", "block_size": 32, "sliding_window": 64}
    assert config_groups(MODELS["g4"], 256) == [sliding] * 3 + [{"type": "full",
                                                                 "block_size": 16}]
    sliding3n = {"type": "sliding_window", "block_size": 16, "sliding_window": 48}
    assert config_groups(MODELS["g3n"], 256) == [sliding3n] * 3 + [{"type": "full",
                                                                    "block_size": 16}]
    assert [t.name.split(".")[0] for t in CASES] == [
        "g3n_1", "g3n_21", "g3n_27", "g3n_3", "g3n_31", "g3n_39", "g3n_7", "g4_12", "g4_14",
        "g4_16", "g4_20", "g4_26", "g4_30", "g4_32", "g4_34"]
    assert sum(answer_of(t)[-1].get("error") is not None for t in CASES) == 1
