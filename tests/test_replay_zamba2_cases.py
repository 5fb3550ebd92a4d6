"""`replay --model-config` of three Zamba2 configs (tests/data/zamba2/) = vLLM 0.33's
schedulers over the groups vLLM's planner builds for them, step for step with KV events.

A Zamba2 keeps one KV cache a use of its shared blocks and a Mamba2 state a layer, so vLLM
plans a full-attention group and Mamba groups at one block size (the attention block raised
until a page holds a Mamba state): tiny-zamba2 1 + 3 at 16, tiny-zamba2-three-blocks 1 + 2 at
32, zamba2-2.7b-style 1 + 6 at 48. The answers: tests/data/sched_zamba2/make_cases.py and
../oracle_mamba.py (the folder's README), sync or async as each config line says.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import answer_of, assert_matches, config_of, replay_case, without_groups

from kvcore.models import layer_specs, read_hf_config
from kvcore.models.hf_config import load_hf_config
from kvcore.sizing import get_kv_cache_groups
from kvcore.specs import MambaSpec

DATA = Path(__file__).resolve().parent / "data" / "sched_zamba2"
MODELS = Path(__file__).resolve().parent / "data" / "zamba2"
CASES = sorted(DATA.glob("*.trace.jsonl"))
BY_PREFIX = {"z1": "tiny-zamba2", "z3": "tiny-zamba2-three-blocks", "z27": "zamba2-2.7b-style"}


def _model(trace: Path) -> Path:
    return MODELS / f"{BY_PREFIX[trace.name.split('_')[0]]}.config.json"



def _kvcli_groups(model: Path, mml: int) -> tuple[list[dict], int]:
    """kvcli's groups of the model, as a config line writes them, and their block size."""
    g = read_hf_config(load_hf_config(model))
    groups = get_kv_cache_groups(layer_specs(g, max_model_len=mml))
    sizes = {grp.kv_cache_spec.block_size for grp in groups}
    assert len(sizes) == 1
    return [{"type": "mamba", "checkpoint": True} if isinstance(grp.kv_cache_spec, MambaSpec)
            else {"type": "full"} for grp in groups], sizes.pop()


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_zamba2_case(trace: Path, tmp_path: Path) -> None:
    cfg = config_of(trace)
    # kvcli's groups of the model are the ones vLLM's planner built (the config line's)
    assert _kvcli_groups(_model(trace), cfg["max_model_len"]) == (cfg["groups"],
                                                                  cfg["block_size"])
    run = replay_case(without_groups(trace, tmp_path), async_scheduling=cfg["async_scheduling"],
                      model_config=str(_model(trace)))
    assert_matches(answer_of(trace), run, asyn=cfg["async_scheduling"],
                   kv_events=cfg["kv_events"])


def test_the_groups_and_cases() -> None:
    """One full-attention group beside the Mamba groups, at the raised block; the 17 cases
    kept of the 120 run (README)."""
    full, mamba = {"type": "full"}, {"type": "mamba", "checkpoint": True}
    assert [_kvcli_groups(MODELS / f"{m}.config.json", 1024) for m in BY_PREFIX.values()] == [
        ([full] + [mamba] * 3, 16), ([full] + [mamba] * 2, 32), ([full] + [mamba] * 6, 48)]
    assert sorted(t.name.split(".")[0] for t in CASES) == sorted([
        "z3_43", "z1_107", "z1_26", "z1_5", "z3_110", "z3_31", "z1_23", "z1_70", "z27_21",
        "z27_96", "z27_87", "z3_67", "z1_24", "z3_76", "z27_4", "z1_48", "z3_46"])
    summaries = [answer_of(t)[-1]["summary"] for t in CASES]
    assert sum(s["totals"]["preemptions"] > 0 for s in summaries) == 9
    assert sum(s["prefix_cache_stats"]["hits"] > 0 for s in summaries) == 9
