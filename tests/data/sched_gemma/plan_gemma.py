# ruff: noqa
"""Dev tool (not a test): vLLM 0.33's per-layer KV cache specs and planning answers for Gemma 3n
and Gemma 4 text models at their real sizes (-> planning.json), for tests/test_gemma_kv.py.

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$ORACLE_HOME/src:tests/data/mtp_draft/oracle_stubs_vision \\
        $ORACLE_HOME/venv/bin/python tests/data/sched_gemma/plan_gemma.py

(ORACLE_HOME=~/.cache/vllm-oracle; from the project root.) Each config is the config class's
`to_dict()` (transformers 5.20, as vLLM loads it) with the keys below: Gemma3nTextConfig's
defaults are E4B's shape (35 layers, the last 15 KV-shared), E2B's 30 layers with 10 shared and
an 8,192-wide MLP; Gemma4TextConfig's defaults (30 layers, every sixth full attention with
global_head_dim 512), the same with 10 KV-shared layers, and with attention_k_eq_v and 1 global
KV head, and with MoE blocks (128 experts 704 wide, 8 a token); plus this folder's two small
configs (the replay cases'). The specs come from
../kv_spec_census/record_kv_specs.py's `build` (vLLM's class built on the meta device at TP 1,
the specs the GPU runner collects, KV-sharing layers skipped); the planning from vLLM's
`get_kv_cache_groups` / `get_kv_cache_config_from_groups` over them (layer-outer layout LBNHC:
FlashAttention and Triton declare no layout, and LBNHC is block-compact, so mixed head sizes
keep it), at two budgets.
"""

import importlib.util, json, sys
from pathlib import Path
from types import SimpleNamespace as NS

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_kv_specs", HERE.parent / "kv_spec_census" / "record_kv_specs.py")
rks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rks)                   # vLLM imported, the census's substitutions on

import torch
from transformers import Gemma3nTextConfig, Gemma4TextConfig
from vllm.v1 import kv_cache_interface as V
from vllm.v1.core import kv_cache_planning as P
from vllm.v1.core.kv_cache_utils import get_kv_cache_capacity, get_max_concurrency_for_kv_cache_config
from vllm.v1.kv_cache_layout import KVCacheLayout

CONFIGS = {
    "gemma3n-e4b": ("Gemma3nForCausalLM", Gemma3nTextConfig, {}),
    "gemma3n-e2b": ("Gemma3nForCausalLM", Gemma3nTextConfig,
                    {"num_hidden_layers": 30, "num_kv_shared_layers": 10,
                     "intermediate_size": [8192] * 30}),
    "gemma4-default": ("Gemma4ForCausalLM", Gemma4TextConfig, {}),
    "gemma4-shared": ("Gemma4ForCausalLM", Gemma4TextConfig, {"num_kv_shared_layers": 10}),
    "gemma4-k-eq-v": ("Gemma4ForCausalLM", Gemma4TextConfig,
                      {"num_kv_shared_layers": 12, "attention_k_eq_v": True,
                       "num_global_key_value_heads": 1}),
    "gemma4-moe": ("Gemma4ForCausalLM", Gemma4TextConfig,
                   {"enable_moe_block": True, "num_experts": 128, "top_k_experts": 8,
                    "moe_intermediate_size": 704}),
}


def config(arch, cls, keys):
    d = json.loads(json.dumps(cls(**keys).to_dict(), default=str))
    d["architectures"] = [arch]
    return d


def to_vllm(s):
    kw = dict(block_size=s["block_size"], num_kv_heads=s["num_kv_heads"],
              head_size=s["head_size"], dtype=torch.bfloat16)
    if s["type"] == "SlidingWindowSpec":
        return V.SlidingWindowSpec(**kw, sliding_window=s["sliding_window"])
    assert s["type"] == "FullAttentionSpec", s
    return V.FullAttentionSpec(**kw)


def plan(specs, available, mml):
    cache = NS(num_gpu_blocks_override=None, prefix_cache_retention_interval=None,
               get_resolved_kv_cache_layout=lambda: KVCacheLayout.LBNHC, mamba_cache_mode="align")
    c = NS(scheduler_config=NS(disable_hybrid_kv_cache_manager=False, max_num_batched_tokens=8192),
           cache_config=cache, model_config=NS(max_model_len=mml),
           attention_config=NS(hisparse_config=None), max_in_flight_tokens=2 * 8192,
           parallel_config=NS(decode_context_parallel_size=1))
    groups = P.get_kv_cache_groups(c, {s["name"]: to_vllm(s) for s in specs})
    kc = P.get_kv_cache_config_from_groups(c, groups, available)
    return {"available": available, "max_model_len": mml,
            "groups": [{"layers": list(g.layer_names), "block_size": g.kv_cache_spec.block_size,
                        "page_size_bytes": g.kv_cache_spec.page_size_bytes,
                        "spec": type(g.kv_cache_spec).__name__} for g in groups],
            "num_blocks": kc.num_blocks,
            "max_concurrency": get_max_concurrency_for_kv_cache_config(c, kc),
            "kv_cache_tokens": get_kv_cache_capacity(c, kc)[0]}


def main():
    rks.rc.rqn.rmm_main_env()
    cfgs = {n: config(*v) for n, v in CONFIGS.items()}
    for small in ("gemma4_small", "gemma3n_small"):
        cfgs[small] = json.loads((HERE / f"{small}.json").read_text())
    out = {}
    for name, cfg in cfgs.items():
        built = rks.build(cfg["architectures"][0], cfg)
        out[name] = {"config": cfg, **built,
                     "planning": [plan(built["specs"], avail, built["max_model_len"])
                                  for avail in (1 << 30, 20 << 30)]}
        print(name, len(built["specs"]), "specs", len(built["kv_sharing"]), "shared",
              [len(p["groups"]) for p in out[name]["planning"]], file=sys.stderr)
    (HERE / "planning.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
