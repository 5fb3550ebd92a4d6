# ruff: noqa
"""vLLM 0.33's own warnings as get_kv_cache_groups plans layers' specs into groups, captured from
its logger (kv_cache_planning.py): padding layers, --disable-hybrid-kv-cache-manager's promotion,
the full-allocation fallback. Each case: layer specs (kind, block, KV heads, head size, window),
the option, and the warnings vLLM logged, in order. Run with the oracle's venv (README.md)."""
import json
import logging
import sys
from types import SimpleNamespace

import torch
from vllm.v1.core import kv_cache_planning as plan
from vllm.v1.kv_cache_interface import FullAttentionSpec, MLAAttentionSpec, SlidingWindowSpec

CASES = {
    # Gemma 3 27B's 62 layers: a full layer every sixth (16 KV heads, head 128, window 1,024)
    "gemma3-27b": [("full" if i % 6 == 5 else "swa", 16, 128) for i in range(62)],
    # gpt-oss-20b + an EAGLE draft of a full layer: 12 sliding + 13 full, group size 13
    "gpt-oss-20b-eagle": [("swa" if i % 2 == 0 else "full", 8, 64) for i in range(24)]
    + [("full", 8, 64)],
    # 3 full + 7 sliding: group size 3, the sliding kind 2 layers short
    "3-full-7-swa": [("full", 8, 128)] * 3 + [("swa", 8, 128)] * 7,
    # one kind: no padding, nothing said
    "llama-like": [("full", 8, 128)] * 4,
    # an MLA target beside a sliding-window draft layer whose page does not divide: fallback
    "mla-swa-draft": [("mla", 1, 576)] * 3 + [("swa", 8, 128)],
}


def spec(kind, kv, head, block=16):
    if kind == "full":
        return FullAttentionSpec(block_size=block, num_kv_heads=kv, head_size=head,
                                 dtype=torch.bfloat16)
    if kind == "mla":
        return MLAAttentionSpec(block_size=block, num_kv_heads=kv, head_size=head,
                                dtype=torch.bfloat16)
    return SlidingWindowSpec(block_size=block, num_kv_heads=kv, head_size=head,
                             dtype=torch.bfloat16, sliding_window=1024)


class Grab(logging.Handler):
    def __init__(self):
        super().__init__()
        self.said = []

    def emit(self, record):
        self.said.append(record.getMessage())


def run(layers, disable_hybrid):
    grab = Grab()
    plan.logger.addHandler(grab)
    plan.logger.setLevel(logging.WARNING)
    cfg = SimpleNamespace(
        scheduler_config=SimpleNamespace(disable_hybrid_kv_cache_manager=disable_hybrid),
        attention_config=None,
        cache_config=SimpleNamespace(get_resolved_kv_cache_layout=lambda: SimpleNamespace(
            is_block_outermost=False)))
    specs = {f"layers.{i}": spec(*l) for i, l in enumerate(layers)}
    try:
        groups = plan.get_kv_cache_groups(cfg, specs)
        out = {"groups": [len(g.layer_names) for g in groups]}
    except Exception as err:   # (vLLM's refusal: recorded, with what it said first)
        out = {"error": f"{type(err).__name__}: {err}"}
    plan.logger.removeHandler(grab)
    return {**out, "warnings": grab.said}


answers = {}
for name, layers in CASES.items():
    for disable in (False, True):
        answers[f"{name}{'/disable-hybrid' if disable else ''}"] = {
            "layers": layers, "disable_hybrid": disable, **run(layers, disable)}
json.dump(answers, open(sys.argv[1], "w"), indent=1)
print(json.dumps({k: (v.get("groups") or v.get("error"), v["warnings"])
                  for k, v in answers.items()}, indent=1))
