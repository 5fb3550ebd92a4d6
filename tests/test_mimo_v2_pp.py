"""MiMo-V2 on pipeline stages against vLLM 0.33.0's own build of each stage
(tests/data/mimo_v2/pp_answers.json, record_mimo_pp.py: the tiny config, its fp8 and its tied
variants, TP 1 and 2, PP 2 and 3): each stage's decoder layers, weights (the embedding on the
first stage, and on the last too where tied, beside the LM head vLLM always builds), buffers
(a RoPE cache for each layer kind the stage holds) and KV cache layers with their pages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.models import read_hf_config
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.pp_stage_rows import assert_stage_is_vllms

DATA = Path(__file__).parent / "data" / "mimo_v2"
CASES = json.loads((DATA / "pp_answers.json").read_text())["cases"]
STAGES = [(n, k, s) for n, c in CASES.items() for k, st in c.items() for s in range(len(st))]


def test_the_cases() -> None:
    assert sorted(CASES) == ["tiny-mimo-v2", "tiny-mimo-v2-fp8", "tiny-mimo-v2-tied"]
    assert len(STAGES) == 3 * 2 * (2 + 3)


@pytest.mark.parametrize(("name", "key", "stage"), STAGES)
def test_each_stage_is_vllms(name: str, key: str, stage: int) -> None:
    rec = CASES[name][key][stage]
    g = read_hf_config(json.loads((DATA / f"{name}.config.json").read_text()), name=name)
    tp, pp = assert_stage_is_vllms(g, key, stage, rec)
    res = resolve_kv_cache_config(geometry=g, tensor_parallel_size=tp,
                                  pipeline_parallel_size=pp, max_model_len=4096,
                                  gpu_memory_gib=4096)
    ours = {}
    for grp in res.stages[stage].groups:
        s = grp.kv_cache_spec
        for n in grp.layer_names:
            ours[f"model.{n}.self_attn.attn"] = s.page_size_bytes // s.block_size
    # (bytes a token: vLLM's pages as each layer built them, at block 16; kvcli's groups hold
    # them after the planner raised a stage's smaller pages)
    assert ours == {n: p // 16 for n, p in rec["specs"].items()}
