"""Record vLLM 0.33's pipeline-parallel KV cache planning for tests/test_sizing_pipeline.py.

A development tool, never run by the tests: it imports the real vLLM from the oracle's
environment. For each case: vLLM's own layer split (`get_pp_indices`), each worker's layer specs
(kvcore's `layer_specs` of the model, converted to vLLM's spec classes, as the sizing_vllm
recorder does), vLLM's `get_global_kv_cache_groups` and `get_kv_cache_configs` with each
worker's memory; kept: the split, each worker's projected groups' layer counts, bytes per block
(`_pool_bytes_per_block_from_builder`) and block count before the minimum, and the pool's.

    HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data:tests/data/mtp_draft/oracle_stubs_vision \\
        ~/.cache/vllm-oracle/venv/bin/python tests/data/sizing_pp/record_pp_answers.py

The Mamba cases with K speculative tokens also keep vLLM's own Mamba spec for the case (its
`VllmConfig` with the TP, PP and speculative config, `Platform._align_hybrid_block_size` with
FlashAttention, the model class's `get_mamba_state_shape_from_config`): the attention and Mamba
block size, the padded page, the state shapes and dtypes and `num_speculative_tokens`, asserted
equal to kvcli's specs the planning is fed (the stubs: `compressed_tensors` and `torchvision`,
which the Gated DeltaNet and Qwen3.5 modules import, ../mtp_draft/README.md; FlashInfer's GDN
checkpoint alignment, 64, as on Hopper).
"""
# ruff: noqa
import json, shutil, sys, tempfile
from pathlib import Path
from types import SimpleNamespace as NS
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from vllm.distributed.utils import get_pp_indices
from vllm.v1.core import kv_cache_planning as P
from vllm.v1.core.kv_cache_config_builder import get_kv_cache_config_builder
from vllm_planning import planning_config
from kvcore.models import load_preset, layer_specs
from kvcore.models.worker_specs import decoder_layer_of
from kvcore.sizing_context import DEFAULT_GPU_MEMORY_UTILIZATION
import torch
from vllm.v1 import kv_cache_interface as V
from kvcore import specs as K

DT = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32,
      "fp8": torch.float8_e4m3fn}


MAMBA_FIELDS = ("num_speculative_blocks", "num_prefill_checkpoint_blocks",
                "prefill_checkpoint_alignment")


def to_vllm(s):
    """kvcore's spec as vLLM's class (MLA as its own spec; the rest as sizing_vllm's recorder,
    a Mamba spec with its speculative and checkpoint blocks: K each, as vLLM's
    `MambaBase.get_kv_cache_spec` builds it from `vllm_config.num_speculative_tokens`)."""
    if isinstance(s, K.MambaSpec):
        return V.MambaSpec(block_size=s.block_size, shapes=tuple(map(tuple, s.shapes)),
                           dtypes=tuple(DT[d] for d in s.dtypes),
                           page_size_padded=s.page_size_padded, mamba_cache_mode="align",
                           **{f: getattr(s, f) for f in MAMBA_FIELDS if getattr(s, f)})
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


_CHECKPOINT_ALIGNMENT = []      # (vLLM's own function, kept while a GDN case replaces it)


def vllm_mamba(source, tp, pp, mml, method, k, gdn_layers):
    """vLLM's own Mamba page for the case: what its config gives every stage's Mamba layers.
    `gdn_layers`: Gated DeltaNet's, on FlashInfer's kernel (Hopper's; a CPU picks Triton's),
    whose layers declare a checkpoint alignment of 64 (as ../mtp_draft's recorders); the
    other models' layers are not built yet when the platform aligns the block: 1."""
    from vllm.config import (CacheConfig, DeviceConfig, LoadConfig, ModelConfig,
                             ParallelConfig, SpeculativeConfig, VllmConfig)
    from vllm.model_executor.layers.mamba import abstract
    from vllm.model_executor.layers.mamba.gdn import qwen_gdn_linear_attn as gdn
    from vllm.model_executor.models import ModelRegistry
    from vllm.platforms import current_platform
    from vllm.platforms.interface import Platform
    from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend
    from vllm.v1.attention.backends.gdn_attn import FLASHINFER_GDN_CHECKPOINT_ALIGNMENT
    from kvcore.models.presets import PRESETS
    current_platform.support_hybrid_kv_cache = lambda: True     # (CudaPlatform's answer)
    if not _CHECKPOINT_ALIGNMENT:
        _CHECKPOINT_ALIGNMENT.append(abstract.get_mamba_prefill_checkpoint_alignment)
    abstract.get_mamba_prefill_checkpoint_alignment = (
        (lambda vc: FLASHINFER_GDN_CHECKPOINT_ALIGNMENT) if gdn_layers
        else _CHECKPOINT_ALIGNMENT[0])
    gdn.get_mamba_prefill_checkpoint_alignment = abstract.get_mamba_prefill_checkpoint_alignment
    with tempfile.TemporaryDirectory() as d:
        if source.endswith(".json"):
            shutil.copy(source, Path(d) / "config.json")
        else:
            (Path(d) / "config.json").write_text(json.dumps(PRESETS[source][1]))
        mc = ModelConfig(model=d, skip_tokenizer_init=True, seed=0, max_model_len=mml)
        pc = ParallelConfig(tensor_parallel_size=tp, pipeline_parallel_size=pp)
        extra = dict(prompt_lookup_max=3, prompt_lookup_min=2) if method == "ngram" else {}
        sc = SpeculativeConfig(method=method, num_speculative_tokens=k, target_model_config=mc,
                               target_parallel_config=pc, **extra)
        vc = VllmConfig(model_config=mc, parallel_config=pc, speculative_config=sc,
                        cache_config=CacheConfig(enable_prefix_caching=True),
                        device_config=DeviceConfig(device="cpu"),
                        load_config=LoadConfig(load_format="dummy", device="meta"))
        Platform._align_hybrid_block_size(vc, FlashAttentionBackend)
        cls, _ = ModelRegistry.resolve_model_cls(mc.architecture, model_config=mc)
        cc = vc.cache_config
        return {"block_size": cc.block_size, "mamba_block_size": cc.mamba_block_size,
                "page_size_padded": cc.mamba_page_size_padded,
                "shapes": [list(x) for x in cls.get_mamba_state_shape_from_config(vc)],
                "dtypes": [str(t).removeprefix("torch.")
                           for t in cls.get_mamba_state_dtype_from_config(vc)],
                "num_speculative_blocks": vc.num_speculative_tokens}


def kvcli_mamba(res):
    """The same of kvcli's specs (the first Mamba group's; every Mamba layer's is one spec)."""
    attn = [g.kv_cache_spec for g in res.config.kv_cache_groups
            if not isinstance(g.kv_cache_spec, K.MambaSpec)]
    m = next(g.kv_cache_spec for g in res.config.kv_cache_groups
             if isinstance(g.kv_cache_spec, K.MambaSpec))
    return {"block_size": attn[0].block_size if attn else m.block_size,
            "mamba_block_size": m.block_size, "page_size_padded": m.page_size_padded,
            "shapes": [list(x) for x in m.shapes], "dtypes": list(m.dtypes),
            "num_speculative_blocks": m.num_speculative_blocks}


def add(name, source, geometry, tp, pp, mml, gib, weights, block_size=16, batches=2, mnbt=8192,
        draft=None, k=0, buffers=None):
    """`source`: the preset or config.json kvcli sized; `gib`: the GPU's memory, of which
    vLLM's default utilization is the budget; `weights`: each worker's weight bytes (kvcli's
    estimate, recorded with the case); `buffers`: each worker's buffer bytes (kvcli's estimate,
    kvcore/sizing/buffers_term.py, recorded too), taken off its memory with the weights. `draft`: a speculative draft (kvcore's DraftModel),
    whose layers, marked is_draft, the last worker holds (vLLM's V2 runner builds its
    speculator on the last PP rank only, v1/worker/gpu/model_runner.py:298-305). `k`:
    num_speculative_tokens, which every stage's Mamba layers keep K blocks (and, Mamba2 and
    Gated DeltaNet, K conv rows) for: vLLM's config is global, so are its hybrid block size
    and page padding (kvcli's `layer_specs` of the whole model), and the draft's attention
    layers take that block size (cache_config.block_size, raised for the Mamba pages)."""
    memory = int(gib * GiB * DEFAULT_GPU_MEMORY_UTILIZATION)
    specs = layer_specs(geometry, tp=tp, max_model_len=mml, block_size=block_size,
                        num_speculative_tokens=k)
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
        attn_block = max((s.block_size for s in specs.values()
                          if not isinstance(s, K.MambaSpec)), default=block_size)
        for lname, s in draft_layer_specs(draft, geometry, block_size=attn_block, tp=tp,
                                          max_model_len=mml).items():
            per_worker[-1][lname] = replace(to_vllm(s), is_draft=True)
    c = config(mml, mnbt, batches, tp)
    global_groups = P.get_global_kv_cache_groups(c, per_worker)
    buffers = buffers or [0] * pp
    available = [memory - w - b for w, b in zip(weights, buffers)]
    builder = get_kv_cache_config_builder(c)
    projected = [P._project_kv_cache_groups_to_worker(global_groups, w) for w in per_worker]
    bpb = [P._pool_bytes_per_block_from_builder(builder, c, g) for g in projected]
    configs = P.get_kv_cache_configs(c, per_worker, available, global_groups)
    cases.append({"name": name, "source": source, "tp": tp, "pp": pp,
                  "max_model_len": mml, "block_size": block_size, "gpu_memory_gib": gib,
                  "memory": memory,
                  "weights": weights, "buffers": buffers,
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
        buffers = [s.buffers_bytes for s in res.stages]
        add(f"{preset}-tp{tp}-pp{pp}", preset, g, tp, pp, mml, gib, weights, buffers=buffers)
    for path, tp, pp in [("tests/data/mamba/falcon-h1-7b.config.json", 1, 3),
                         ("tests/data/mamba/nemotron-nano-9b-v2.config.json", 1, 2)]:
        res = resolve_kv_cache_config(model_config=path, gpu_memory_gib=80,
                                      tensor_parallel_size=tp, pipeline_parallel_size=pp,
                                      max_model_len=8192)
        weights = [s.weights_bytes for s in res.stages]
        buffers = [s.buffers_bytes for s in res.stages]
        add(f"{Path(path).name.split('.config')[0]}-pp{pp}", path, res.geometry, tp, pp, 8192,
            80, weights, buffers=buffers)
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
        buffers = [s.buffers_bytes for s in res.stages]
        add(f"{preset}-tp{tp}-pp{pp}-{method}", preset, res.geometry, tp, pp, mml, gib,
            weights, draft=res.draft, buffers=buffers)
        cases[-1]["draft"] = [model, method]
    # Mamba hybrids with K speculative tokens: Qwen3-Next's and Qwen3.5's MTP module (its
    # attention layer on the last stage beside the Gated DeltaNet layers), and n-gram drafts
    # (no draft layer: K speculative blocks in every stage's Mamba groups)
    q35 = "tests/data/mtp_draft/13-qwen3-5-text-defaults/target/config.json"
    for source, method, k, tp, pp, mml, gib in [
            ("qwen3-next-80b-a3b", "mtp", 1, 4, 2, 32768, 141),
            ("qwen3-next-80b-a3b", "mtp", 3, 4, 2, 32768, 141),
            ("qwen3-next-80b-a3b", "mtp", 1, 2, 3, 32768, 141),
            ("qwen3-next-80b-a3b", "mtp", 3, 2, 3, 32768, 141),
            (q35, "mtp", 1, 1, 2, 32768, 80),
            (q35, "mtp", 2, 1, 2, 32768, 80),
            ("tests/data/mamba/nemotron-nano-9b-v2.config.json", "ngram", 2, 1, 2, 8192, 80),
            ("tests/data/mamba/nemotron-nano-9b-v2.config.json", "ngram", 3, 1, 3, 8192, 80),
            ("jamba-v0.1", "ngram", 2, 2, 3, 32768, 80),
            ("jamba-v0.1", "ngram", 4, 2, 2, 32768, 80),
            ("tests/data/mamba/falcon-h1-7b.config.json", "ngram", 2, 1, 3, 8192, 80)]:
        where = ({"model_config": source} if source.endswith(".json") else {"model": source})
        res = resolve_kv_cache_config(**where, gpu_memory_gib=gib, tensor_parallel_size=tp,
                                      pipeline_parallel_size=pp, max_model_len=mml,
                                      draft=(None, method) if method == "mtp" else None,
                                      num_speculative_tokens=k)
        weights = [s.weights_bytes for s in res.stages]
        buffers = [s.buffers_bytes for s in res.stages]
        short = source.split("/")[-1].split(".config")[0] if source.endswith(".json") else source
        short = "qwen3-5-text-defaults" if source == q35 else short
        add(f"{short}-tp{tp}-pp{pp}-{method}-k{k}", source, res.geometry, tp, pp, mml, gib,
            weights, draft=res.draft, k=k, buffers=buffers)
        if method == "mtp":
            cases[-1]["draft"] = [None, method]
        cases[-1]["num_speculative_tokens"] = k
        mamba = vllm_mamba(source, tp, pp, mml, method, k,
                           res.geometry.mamba.version == "gdn")
        assert mamba == kvcli_mamba(res), (cases[-1]["name"], mamba, kvcli_mamba(res))
        cases[-1]["expected"]["mamba"] = mamba
    out = Path(__file__).with_name("answers.json")
    json.dump({"generator": "vLLM 0.33.0 get_pp_indices, get_global_kv_cache_groups, "
               "get_kv_cache_configs (real code, CPU)", "cases": cases}, open(out, "w"), indent=1)
    print(len(cases))
