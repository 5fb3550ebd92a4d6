"""DeepSeek-V3.2 (and GLM-5, the same sparse-MLA class) on pipeline stages against vLLM 0.33.0's
own build of each stage (tests/data/weights_census/dsv32_pp/answers.json,
record_dsv32_pp.py: quant2/'s 4-layer DeepSeek-V3.2, unquantised and fp8, and GLM-5's fp8 block
config, TP 1 and 2, PP 2 and 4): each stage's decoder layers, weights, buffers and KV cache
layers (the MLA cache and the indexer's key cache of each of its layers, their bytes a token).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kvcore.models import read_hf_config
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.pp_stage_rows import assert_stage_is_vllms

DATA = Path(__file__).parent / "data" / "weights_census" / "dsv32_pp"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
# (record_dsv32_pp.py's CASES: quant2/'s config, its quantization_config dropped or kept)
BASES = {"deepseek-v3.2-l4": ("deepseek-v3.2-l4-fp8", True),
         "deepseek-v3.2-l4-fp8": ("deepseek-v3.2-l4-fp8", False),
         "glm-5-fp8-block": ("glm-5-fp8-block", False)}
STAGES = [(n, k, s) for n, c in CASES.items() for k, st in c.items() if k.startswith("tp")
          for s in range(len(st))]


def _config(name: str) -> dict:
    base, plain = BASES[name]
    cfg = json.loads((DATA.parent / "quant2" / f"{base}.config.json").read_text())
    if plain:
        cfg.pop("quantization_config")
    return cfg


def _kv_layers(specs: dict) -> dict[tuple[int, str], int]:
    """vLLM's KV cache layers by (decoder layer, "indexer" or "mla"): bytes a token."""
    out = {}
    for name, s in specs.items():
        layer = int(re.search(r"layers\.(\d+)\.", name).group(1))
        out[(layer, "indexer" if "indexer" in name else "mla")] = (
            s["page_size_bytes"] // s["block_size"])
    return out


def test_the_cases() -> None:
    assert sorted(CASES) == sorted(BASES)
    assert len(STAGES) == 36
    assert not [s for n, k, i in STAGES if "refused" in (s := CASES[n][k][i])]


@pytest.mark.parametrize(("name", "key", "stage"), STAGES)
def test_each_stage_is_vllms(name: str, key: str, stage: int) -> None:
    rec = CASES[name][key][stage]
    g = read_hf_config(_config(name), name=name)
    tp, pp = assert_stage_is_vllms(g, key, stage, rec)
    res = resolve_kv_cache_config(geometry=g, tensor_parallel_size=tp,
                                  pipeline_parallel_size=pp, max_model_len=4096,
                                  gpu_memory_gib=4096)
    ours = {}
    for grp in res.stages[stage].groups:
        spec = grp.kv_cache_spec
        for n in grp.layer_names:
            s = spec.kv_cache_specs[n] if hasattr(spec, "kv_cache_specs") else spec
            kind = "indexer" if n.endswith(".indexer") else "mla"
            ours[(int(n.split(".")[1]), kind)] = s.page_size_bytes // s.block_size
    assert ours == _kv_layers(rec["kv_specs"])
