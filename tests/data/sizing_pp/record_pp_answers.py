"""Record vLLM 0.33's pipeline-parallel KV cache planning for tests/test_sizing_pipeline.py.

A development tool, never run by the tests: it imports the real vLLM from the oracle's
environment. For each case: vLLM's own layer split (`get_pp_indices`), each worker's layer specs
(kvcore's `layer_specs` of the model, converted to vLLM's spec classes, as the sizing_vllm
recorder does), vLLM's `get_global_kv_cache_groups` and `get_kv_cache_configs` with each
worker's memory; kept: the split, each worker's projected groups' layer counts, bytes per block
(`_pool_bytes_per_block_from_builder`) and block count before the minimum, and the pool's.

    PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data VLLM_LOGGING_LEVEL=ERROR \\
        ~/.cache/vllm-oracle/venv/bin/python tests/data/sizing_pp/record_pp_answers.py
"""
# ruff: noqa
import json, sys
from pathlib import Path
from types import SimpleNamespace as NS
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from vllm.distributed.utils import get_pp_indices
from vllm.v1.core import kv_cache_planning as P
from vllm.v1.core.kv_cache_config_builder import get_kv_cache_config_builder
from vllm_planning import planning_config
from kvcore.models import load_preset, layer_specs
from kvcore.models.geometry import decoder_layer_of
from kvcore.sizing_context import DEFAULT_GPU_MEMORY_UTILIZATION
import torch
from vllm.v1 import kv_cache_interface as V
from kvcore import specs as K

DT = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32,
      "fp8": torch.float8_e4m3fn}


def to_vllm(s):
    """kvcore's spec as vLLM's class (MLA as its own spec; the rest as sizing_vllm's recorder)."""
    if isinstance(s, K.MambaSpec):
        return V.MambaSpec(block_size=s.block_size, shapes=tuple(map(tuple, s.shapes)),
                           dtypes=tuple(DT[d] for d in s.dtypes),
                           page_size_padded=s.page_size_padded, mamba_cache_mode="align")
    kw = dict(block_size=s.block_size, num_kv_heads=s.num_kv_heads, head_size=s.head_size,
              dtype=DT[s.dtype])
    if isinstance(s, K.SlidingWindowSpec):
        return V.SlidingWindowSpec(**kw, sliding_window=s.sliding_window)
    if isinstance(s, K.ChunkedLocalAttentionSpec):
        return V.ChunkedLocalAttentionSpec(**kw, attention_chunk_size=s.attention_chunk_size)
    if isinstance(s, K.MLAAttentionSpec):
        return V.MLAAttentionSpec(**kw)
    return V.FullAttentionSpec(**kw)

GiB = 1 << 30


def config(mml, mnbt, batches, tp):
    c = planning_config(max_model_len=mml, max_num_batched_tokens=mnbt,
                        max_in_flight_tokens=batches * mnbt)
    c.model_config.original_max_model_len = mml
    c.model_config.supports_kv_cache_grouping = False   # (the default grouping)
    c.num_prefill_lookahead_tokens = 0
    c.parallel_config.tensor_parallel_size = tp
    c.parallel_config.pipeline_parallel_size = 1
    c.speculative_config = None
    return c


cases = []


def add(name, source, geometry, tp, pp, mml, gib, weights, block_size=16, batches=2, mnbt=8192,
        draft=None):
    """`source`: the preset or config.json kvcli sized; `gib`: the GPU's memory, of which
    vLLM's default utilization is the budget; `weights`: each worker's weight bytes (kvcli's
    estimate, recorded with the case). `draft`: a speculative draft (kvcore's DraftModel),
    whose layers, marked is_draft, the last worker holds (vLLM's V2 runner builds its
    speculator on the last PP rank only, v1/worker/gpu/model_runner.py:298-305)."""
    memory = int(gib * GiB * DEFAULT_GPU_MEMORY_UTILIZATION)
    specs = layer_specs(geometry, tp=tp, max_model_len=mml, block_size=block_size)
    n = geometry.num_layers
    split = [get_pp_indices(n, r, pp) for r in range(pp)]

    def owner(name):
        i = decoder_layer_of(name, n)
        return next(r for r, (a, b) in enumerate(split) if a <= i < b)

    per_worker = [{} for _ in range(pp)]
    for lname, s in specs.items():
        per_worker[owner(lname)][lname] = to_vllm(s)
    if draft is not None:
        from dataclasses import replace
        from kvcore.models.eagle_draft import draft_layer_specs
        for lname, s in draft_layer_specs(draft, geometry, block_size=block_size, tp=tp,
                                          max_model_len=mml).items():
            per_worker[-1][lname] = replace(to_vllm(s), is_draft=True)
    c = config(mml, mnbt, batches, tp)
    global_groups = P.get_global_kv_cache_groups(c, per_worker)
    available = [memory - w for w in weights]
    builder = get_kv_cache_config_builder(c)
    projected = [P._project_kv_cache_groups_to_worker(global_groups, w) for w in per_worker]
    bpb = [P._pool_bytes_per_block_from_builder(builder, c, g) for g in projected]
    configs = P.get_kv_cache_configs(c, per_worker, available, global_groups)
    cases.append({"name": name, "source": source, "tp": tp, "pp": pp,
                  "max_model_len": mml, "block_size": block_size, "gpu_memory_gib": gib,
                  "memory": memory,
                  "weights": weights,
                  "expected": {"split": [list(x) for x in split],
                               "kv_layers": [[len(g.layer_names) for g in p] for p in projected],
                               "bytes_per_block": bpb,
                               "worker_blocks": [a // b for a, b in zip(available, bpb)],
                               "num_blocks": [k.num_blocks for k in configs]}})


if __name__ == "__main__":
    from kvcore.sizing.resolve import resolve_kv_cache_config

    models = [("llama-3.1-70b", 4, 2, 8192, 80), ("llama-3.1-70b", 2, 3, 8192, 80),
              ("deepseek-v3", 8, 2, 8192, 80), ("gemma-3-27b", 1, 3, 8192, 80),
              ("gpt-oss-20b", 1, 5, 8192, 40), ("qwen3-8b", 1, 5, 40960, 24),
              ("jamba-v0.1", 2, 3, 32768, 80), ("llama-3.1-8b", 1, 7, 8192, 24)]
    for preset, tp, pp, mml, gib in models:
        res = resolve_kv_cache_config(preset, gpu_memory_gib=gib, tensor_parallel_size=tp,
                                      pipeline_parallel_size=pp, max_model_len=mml)
        g = res.geometry
        weights = [s.weights_bytes for s in res.stages]
        add(f"{preset}-tp{tp}-pp{pp}", preset, g, tp, pp, mml, gib, weights)
    for path, tp, pp in [("tests/data/mamba/falcon-h1-7b.config.json", 1, 3),
                         ("tests/data/mamba/nemotron-nano-9b-v2.config.json", 1, 2)]:
        res = resolve_kv_cache_config(model_config=path, gpu_memory_gib=80,
                                      tensor_parallel_size=tp, pipeline_parallel_size=pp,
                                      max_model_len=8192)
        weights = [s.weights_bytes for s in res.stages]
        add(f"{Path(path).name.split('.config')[0]}-pp{pp}", path, res.geometry, tp, pp, 8192,
            80, weights)
    # speculative drafts on the last stage: DeepSeek-V3's MTP module, Llama-3.1-8B's EAGLE-3
    for preset, method, model, tp, pp, mml, gib in [
            ("deepseek-v3", "mtp", None, 8, 2, 32768, 141),
            ("llama-3.1-8b", "eagle3", "eagle3-llama-3.1-8b", 1, 2, 8192, 24),
            ("llama-3.1-70b", "eagle3", "tests/data/eagle_draft/3-llama31-70b-eagle3/draft/config.json",
             4, 3, 8192, 80)]:
        res = resolve_kv_cache_config(preset, gpu_memory_gib=gib, tensor_parallel_size=tp,
                                      pipeline_parallel_size=pp, max_model_len=mml,
                                      draft=(model, method), num_speculative_tokens=1)
        weights = [s.weights_bytes for s in res.stages]
        add(f"{preset}-tp{tp}-pp{pp}-{method}", preset, res.geometry, tp, pp, mml, gib,
            weights, draft=res.draft)
        cases[-1]["draft"] = [model, method]
    out = Path(__file__).with_name("answers.json")
    json.dump({"generator": "vLLM 0.33.0 get_pp_indices, get_global_kv_cache_groups, "
               "get_kv_cache_configs (real code, CPU)", "cases": cases}, open(out, "w"), indent=1)
    print(len(cases))
