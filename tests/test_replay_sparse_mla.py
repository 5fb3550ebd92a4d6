"""`replay --model-config` of a small DeepSeek-V3.2 (sparse MLA) = vLLM 0.33's schedulers over
the one group vLLM's planner builds for it (its latent and indexer caches at block 64), step
for step with their KV events (tests/data/sched_sparse_mla/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_sched import answer_of, assert_matches, config_of, replay_case, without_groups

from kvcore.group_specs import UniformTypeKVCacheSpecs
from kvcore.models import layer_specs, read_hf_config
from kvcore.sizing import get_kv_cache_groups

DATA = Path(__file__).resolve().parent / "data"
MODEL = DATA / "sched_sparse_mla" / "deepseek-v3.2-tiny.json"
CASES = sorted((DATA / "sched_sparse_mla").glob("*.trace.jsonl"))
PLANNED = json.loads((DATA / "sparse_mla" / "answers.json").read_text())["cases"]



def _vllms_events(trace: Path) -> list[dict]:
    """The answer with the group's kind vLLM gives the sparse model's group (the oracle builds
    a FullAttentionSpec group in its place)."""
    (kind,) = {g["kv_cache_spec_kind"] for c in PLANNED for g in c["groups"]}
    return [json.loads(json.dumps(e).replace('"full_attention"', json.dumps(kind)))
            for e in answer_of(trace)]


def test_one_group_at_block_64() -> None:
    g = read_hf_config(json.loads(MODEL.read_text()))
    (group,) = get_kv_cache_groups(layer_specs(g, max_model_len=1024))
    assert isinstance(group.kv_cache_spec, UniformTypeKVCacheSpecs)
    assert (group.kv_cache_spec.block_size, len(group.layer_names)) == (64, 8)
    assert len(CASES) == 6


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_sparse_mla_case(trace: Path, tmp_path: Path) -> None:
    cfg = config_of(trace)
    assert cfg["groups"] == [{"type": "full", "block_size": 64}]
    run = replay_case(without_groups(trace, tmp_path), async_scheduling=cfg["async_scheduling"],
                      model_config=str(MODEL))
    assert_matches(_vllms_events(trace), run, asyn=cfg["async_scheduling"],
                   kv_events=cfg["kv_events"])
