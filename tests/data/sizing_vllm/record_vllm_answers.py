"""Record vLLM 0.33's own planning answers for tests/test_sizing_vllm_answers.py.

A development tool, never run by the tests: it imports the real vLLM from the oracle's
environment. Run from a folder outside the project:

    PYTHONPATH=$HOME/.cache/vllm-oracle/src VLLM_LOGGING_LEVEL=ERROR \
        ~/.cache/vllm-oracle/venv/bin/python tests/data/sizing_vllm/record_vllm_answers.py
"""
# ruff: noqa
import json, sys
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3]))
import torch
from types import SimpleNamespace as NS
from vllm.v1 import kv_cache_interface as V
from vllm.v1.core import kv_cache_planning as P
from vllm.v1.kv_cache_layout import KVCacheLayout
from vllm.v1.core.kv_cache_utils import get_max_concurrency_for_kv_cache_config, get_kv_cache_capacity
from vllm.v1.core.kv_cache_planning import DefaultKVCacheConfigBuilder, _estimate_max_model_len_from_groups, _pool_bytes_per_block
from kvcore.models import load_preset, layer_specs
from kvcore import specs as K
DT = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32, "fp8": torch.float8_e4m3fn}

def cfg(mml, mnbt, batches, disable_hybrid=False, mode="align"):
    cache = NS(num_gpu_blocks_override=None, get_resolved_kv_cache_layout=lambda: KVCacheLayout.LBNHC,
               prefix_cache_retention_interval=None, mamba_cache_mode=mode)
    return NS(scheduler_config=NS(disable_hybrid_kv_cache_manager=disable_hybrid, max_num_batched_tokens=mnbt),
              cache_config=cache, model_config=NS(max_model_len=mml),
              attention_config=NS(hisparse_config=None), max_in_flight_tokens=batches * mnbt,
              parallel_config=NS(decode_context_parallel_size=1))

def spec_json(s):
    if isinstance(s, K.MambaSpec):
        # (the speculative and checkpoint blocks only where set: the older cases' lines unchanged)
        extra = {f: getattr(s, f) for f in ("num_speculative_blocks", "num_prefill_checkpoint_blocks", "prefill_checkpoint_alignment") if getattr(s, f)}
        return {"type": "mamba", "block_size": s.block_size, "shapes": [list(x) for x in s.shapes], "dtypes": list(s.dtypes), "page_size_padded": s.page_size_padded, **extra}
    d = {"block_size": s.block_size, "num_kv_heads": s.num_kv_heads, "head_size": s.head_size, "dtype": s.dtype}
    if isinstance(s, K.SlidingWindowSpec):
        return {"type": "sliding_window", "sliding_window": s.sliding_window, **d}
    if isinstance(s, K.ChunkedLocalAttentionSpec):
        return {"type": "chunked_local", "attention_chunk_size": s.attention_chunk_size, **d}
    return {"type": "full", **d}

def to_vllm(j, mode="align"):
    if j["type"] == "mamba":
        return V.MambaSpec(block_size=j["block_size"], shapes=tuple(map(tuple, j["shapes"])), dtypes=tuple(DT[d] for d in j["dtypes"]), page_size_padded=j["page_size_padded"], mamba_cache_mode=mode,
                           **{f: j[f] for f in ("num_speculative_blocks", "num_prefill_checkpoint_blocks", "prefill_checkpoint_alignment") if f in j})
    kw = dict(block_size=j["block_size"], num_kv_heads=j["num_kv_heads"], head_size=j["head_size"], dtype=DT[j["dtype"]])
    if j["type"] == "sliding_window":
        return V.SlidingWindowSpec(**kw, sliding_window=j["sliding_window"])
    if j["type"] == "chunked_local":
        return V.ChunkedLocalAttentionSpec(**kw, attention_chunk_size=j["attention_chunk_size"])
    spec = V.FullAttentionSpec(**kw)
    # an EAGLE draft's layer, as the model runner marks it (compare=False in vLLM's spec)
    return __import__("dataclasses").replace(spec, is_draft=True) if j.get("is_draft") else spec

cases = []
def add(name, layers, available, mml, mnbt=8192, batches=2, disable_hybrid=False, mode="align"):
    c = cfg(mml, mnbt, batches, disable_hybrid, mode)
    vs = {n: to_vllm(j, mode) for n, j in layers.items()}
    groups = P.get_kv_cache_groups(c, dict(vs))
    kc = P.get_kv_cache_config_from_groups(c, groups, available)
    conc = get_max_concurrency_for_kv_cache_config(c, kc)
    tokens, _ = get_kv_cache_capacity(c, kc)
    est = _estimate_max_model_len_from_groups(DefaultKVCacheConfigBuilder(), c, groups, available - _pool_bytes_per_block(c, groups))
    # (the Mamba cache mode only where prefix caching is off: the older cases' lines unchanged)
    cases.append({"name": name, "layers": layers, "available": available, "max_model_len": mml,
                  "max_num_batched_tokens": mnbt, "max_concurrent_batches": batches, "disable_hybrid": disable_hybrid,
                  **({"mamba_cache_mode": mode} if mode != "align" else {}),
                  "expected": {"groups": [{"layers": list(g.layer_names), "block_size": g.kv_cache_spec.block_size,
                                           "page_size_bytes": g.kv_cache_spec.page_size_bytes,
                                           "spec": type(g.kv_cache_spec).__name__} for g in groups],
                               "num_blocks": kc.num_blocks, "max_concurrency": conc, "kv_cache_tokens": tokens,
                               "max_model_len_fits": est}})

for preset, tp, mml, avail in [("llama-3.1-8b", 1, 131072, 61 << 30), ("gemma-3-27b", 1, 131072, 21 << 30),
                               ("gpt-oss-20b", 1, 131072, 59 << 30), ("jamba-v0.1", 2, 32768, 24 << 30),
                               ("qwen3-8b", 1, 40960, 3 << 30), ("gemma-3-27b", 1, 131072, 3 << 30)]:
    ls = layer_specs(load_preset(preset), tp=tp, max_model_len=mml)
    add(f"{preset}-tp{tp}-{avail >> 30}gib", {n: spec_json(s) for n, s in ls.items()}, avail, mml)
# the target's layers and its EAGLE draft's (kvcore.models.eagle_draft), marked is_draft
from kvcore.models.eagle_draft import draft_layer_specs, load_draft
DRAFT = str(__import__("pathlib").Path(__file__).resolve().parents[1] / "sched_spec_eagle" / "eagle-draft")
for preset, draft, method, mml, avail in [
        ("llama-3.1-8b", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "eagle3", 8192, 6798061649),
        ("llama-3.1-8b", DRAFT, "eagle", 8192, 6 << 30),
        ("gpt-oss-20b", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "eagle3", 131072, 59 << 30)]:
    g = load_preset(preset)
    ls = {n: spec_json(s) for n, s in layer_specs(g, max_model_len=mml).items()}
    d = load_draft(draft, method, g)
    ls.update({n: {**spec_json(s), "is_draft": True}
               for n, s in draft_layer_specs(d, g, max_model_len=mml).items()})
    add(f"{preset}-{method}-draft-{avail >> 30}gib", ls, avail, mml)
# Qwen3-Next with its MTP module (kvcore.models.mtp_draft) and K speculative tokens: the GDN
# layers' spec keeps K speculative blocks (and K more conv rows), the draft's layer is_draft
from kvcore.models.mtp_draft import mtp_draft
for k, avail in [(1, 54 << 30), (3, 54 << 30)]:
    g = load_preset("qwen3-next-80b-a3b")
    ls = layer_specs(g, tp=2, max_model_len=32768, num_speculative_tokens=k)
    attn_bs = max(s.block_size for s in ls.values() if s.kind != "mamba")
    layers = {n: spec_json(s) for n, s in ls.items()}
    layers.update({n: {**spec_json(s), "is_draft": True} for n, s in draft_layer_specs(
        mtp_draft(g), g, block_size=attn_bs, tp=2, max_model_len=32768).items()})
    add(f"qwen3-next-80b-a3b-tp2-mtp-k{k}-{avail >> 30}gib", layers, avail, 32768)
# GLM-4.5-Air at TP 4 with its MTP module: 46 + 1 full-attention layers in one group, on the
# memory `kvcli config glm-4.5-air --gpu-memory-gib 80 --tp 4 --spec-method mtp` leaves
g = load_preset("glm-4.5-air")
layers = {n: spec_json(s) for n, s in layer_specs(g, tp=4, max_model_len=32768).items()}
layers.update({n: {**spec_json(s), "is_draft": True} for n, s in draft_layer_specs(
    mtp_draft(g), g, tp=4, max_model_len=32768).items()})
add("glm-4.5-air-tp4-mtp-22gib", layers, 24_278_961_766, 32768)
# Mamba hybrids with an EAGLE draft beside them (tests/data/sizing_vllm/drafts: configs made up
# for these cases), K = 2 speculative tokens, prefix caching on (align) and off (none). The
# draft's attention layers take the block size the target's attention was raised to for its
# Mamba pages (vLLM's Attention.get_kv_cache_spec reads cache_config.block_size after
# Platform.update_block_size_for_backend raised it, once both models are loaded); the planning
# below then unifies their pages. The memory is what kvcli's sizing leaves on the GPU named.
from kvcore.sizing.resolve import resolve_kv_cache_config
DRAFTS = __import__("pathlib").Path(__file__).resolve().parent / "drafts"
for preset, draft, method, tp, gib, mml in [
        ("qwen3-next-80b-a3b", "qwen3-next-eagle3", "eagle3", 2, 141, 32768),
        ("qwen3-next-80b-a3b", "qwen3-next-eagle3", "eagle3", 4, 80, 32768),
        ("qwen3-next-80b-a3b", "qwen3-next-eagle3-kv4", "eagle3", 2, 141, 32768),
        ("qwen3-next-80b-a3b", "qwen3-next-eagle3-kv4", "eagle3", 4, 80, 32768),
        ("nemotron-nano-9b-v2", "nemotron-nano-9b-v2-eagle3", "eagle3", 1, 80, 32768),
        ("jamba-v0.1", "jamba-eagle", "eagle", 2, 80, 32768),
        # (the Llama-3.1-8B draft preset: a page twice the target's attention page)
        ("qwen3-next-80b-a3b", "eagle3-llama-3.1-8b", "eagle3", 2, 141, 32768)]:
    for mode in ("align", "none"):
        g = load_preset(preset)
        ls = layer_specs(g, tp=tp, max_model_len=mml, num_speculative_tokens=2, mamba_cache_mode=mode)
        attn_bs = max(s.block_size for s in ls.values() if s.kind != "mamba")
        layers = {n: spec_json(s) for n, s in ls.items()}
        path = draft if draft.startswith("eagle3-llama") else str(DRAFTS / draft)
        d = load_draft(path, method, g)
        layers.update({n: {**spec_json(s), "is_draft": True} for n, s in draft_layer_specs(
            d, g, block_size=attn_bs, tp=tp, max_model_len=mml).items()})
        avail = resolve_kv_cache_config(preset, gpu_memory_gib=gib, tensor_parallel_size=tp,
                                        max_model_len=mml, enable_prefix_caching=mode == "align",
                                        draft=(path, method),
                                        num_speculative_tokens=2).available_bytes
        add(f"{preset}-tp{tp}-{draft}-{mode}", layers, avail, mml, mode=mode)
f = lambda h=64: {"type": "full", "block_size": 16, "num_kv_heads": 2, "head_size": h, "dtype": "float32"}
w = lambda h=64, win=1: {"type": "sliding_window", "sliding_window": win, "block_size": 16, "num_kv_heads": 2, "head_size": h, "dtype": "float32"}
ch = lambda c=64: {"type": "chunked_local", "attention_chunk_size": c, "block_size": 16, "num_kv_heads": 2, "head_size": 64, "dtype": "float32"}
M = 16384
add("3full-7swa", {f"l{i}": (f() if i <= 3 else w()) for i in range(1, 11)}, 3 * 32 * M, 1024)
add("6full-5swa", {f"l{i}": (f() if i <= 6 else w()) for i in range(1, 12)}, 6 * 32 * M, 1024)
add("head64-swa32", {"l1": f(64), "l2": w(32)}, 32 * M, 1024)
add("head128-head64", {"l1": f(128), "l2": f(64)}, 3 * 32 * M, 1024)
add("full-swa-disable-hybrid", {"l1": f(), "l2": w(win=256)}, 2 * 32 * M, 1024, disable_hybrid=True)
add("full-chunked-swa3", {**{f"c{i}": ch(256) for i in range(9)}, **{f"f{i}": f() for i in range(3)}, **{f"s{i}": w(win=512) for i in range(4)}}, 9 * 100 * M, 8192, mnbt=512, batches=1)
add("swa-different-windows", {**{f"a{i}": w(win=128) for i in range(4)}, **{f"b{i}": w(win=1024) for i in range(4)}}, 4 * 200 * M, 4096, mnbt=256)
json.dump({"generator": "vLLM 0.33.0 kv_cache_planning (real code, CPU), layer-outer layout LBNHC", "cases": cases},
          open(__import__("pathlib").Path(__file__).with_name("cases.json"), "w"), indent=1)
print(len(cases))
