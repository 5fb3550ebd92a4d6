"""Reading the oracle's `perf` cases (tests/data/perf_cases): a spec's header into kvcore's
geometry and options, its steps into `StepBatch`es."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from kvcore.clock.batch import StepBatch
from kvcore.clock.vllm_count import VllmShape, vllm_shape
from kvcore.models import read_hf_config

CASES = Path(__file__).parent / "data" / "perf_cases"
FRESH = Path(__file__).parent / "data" / "perf_fresh"
MLA = Path(__file__).parent / "data" / "perf_mla"
CONFIGS = Path(__file__).parent / "data" / "perf_configs"
HYBRID = Path(__file__).parent / "data" / "perf_hybrid"  # (Falcon-H1: its Mamba2 not counted)
ZAMBA2 = Path(__file__).parent / "data" / "perf_zamba2"  # (its shared blocks: see README)
FAMILIES = Path(__file__).parent / "data" / "perf_families"  # (Gemma 3n / 4, GPT-2's, Mamba...)


def load_spec(path: Path, *,
              substitute: bool = False) -> tuple[dict, VllmShape, list[StepBatch]]:
    """``substitute``: read the config with the header's ``architectures`` as the oracle built
    it (a multimodal wrapper's text-only class: the same perf.py numbers, PERF.md)."""
    lines = [json.loads(s) for s in path.read_text().splitlines()
             if s.strip() and not s.startswith("#")]
    head = lines[0]
    cfg = head.get("model_config") or json.loads(
        (path.parent / head["model_config_file"]).read_text())
    if substitute and head.get("architectures"):
        cfg = {**cfg, "architectures": head["architectures"]}
    g = read_hf_config(cfg, name=head.get("name", ""))
    if head.get("dtype") not in (None, "auto"):
        g = dataclasses.replace(g, dtype=head["dtype"])
    cf = head.get("counterfactual_quant_method")
    shape = vllm_shape(g, tp=head.get("tp", 1), kv_cache_dtype=head.get("kv_cache_dtype", "auto"),
                       enable_ep=head.get("enable_expert_parallel", False),
                       online_quant=head.get("quantization"), quant_name=cf)
    return head, shape, [batch(step) for step in lines[1:]]


def batch(step: dict) -> StepBatch:
    b = StepBatch()
    for r in step["requests"]:
        t = r["num_tokens"]
        c = r["context_len"] if "context_len" in r else r["num_computed_tokens"] + t
        b.add(t, c, r["is_prefill"], r.get("count", 1))
    return b


def expected(path: Path) -> tuple[dict, list[dict]]:
    lines = [json.loads(s) for s in path.read_text().splitlines() if s.strip()]
    return lines[0]["header"], lines[1:]
