# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33's start-up derives and refuses for method "mtp"
(the **ran** claims of DESIGN.md). Writes variants of tiny-deepseek-v3/config.json under
WORKDIR and prints one line per probe.

    R=~/.cache/vllm-oracle; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR PYTHONPATH=$R/src \\
        $R/venv/bin/python tests/data/sched_spec_mtp/probe_mtp_startup.py WORKDIR
"""
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from vllm.config import (CacheConfig, DeviceConfig, ModelConfig, ParallelConfig,
                         SchedulerConfig, SpeculativeConfig, VllmConfig)
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.core.single_type_kv_cache_manager import register_all_kvcache_specs
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
from vllm.v1.structured_output import StructuredOutputManager

BASE = json.loads((Path(__file__).resolve().parent / "tiny-deepseek-v3/config.json").read_text())
WORK = Path(sys.argv[1])


def variant(name, **over):
    d = WORK / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps(dict(BASE, **over)))
    return str(d)


def spec(d, **kw):
    mc = ModelConfig(model=d, dtype="float16", seed=0, skip_tokenizer_init=True,
                     max_model_len=4096)
    return mc, SpeculativeConfig(method="mtp", target_model_config=mc,
                                 target_parallel_config=ParallelConfig(), **kw)


def draft(d, **kw):
    mc, sp = spec(d, **kw)
    dm = sp.draft_model_config
    return dict(model_is_target=sp.model == mc.model, arch=dm.architectures,
                model_type=dm.hf_config.model_type, n_predict=dm.hf_config.n_predict,
                k=sp.num_speculative_tokens, multi_module=sp.use_multi_module_mtp(),
                use_eagle_block_drop=sp.use_eagle_block_drop())


def sched(d, k, bs, caching, flagged, legacy=False):
    """The Scheduler over one group flagged (or not) as the drafter's, as planning does."""
    mc, sp = spec(d, num_speculative_tokens=k, disable_lookahead_block_hashes=legacy)
    vc = VllmConfig(model_config=mc, parallel_config=ParallelConfig(), speculative_config=sp,
                    scheduler_config=SchedulerConfig(max_model_len=4096, is_encoder_decoder=False,
                                                     async_scheduling=False),
                    cache_config=CacheConfig(block_size=bs, enable_prefix_caching=caching),
                    device_config=DeviceConfig(device="cpu"))
    kvc = KVCacheConfig(num_blocks=1000, kv_cache_tensors=[], kv_cache_groups=[KVCacheGroupSpec(
        ["layer"], FullAttentionSpec(block_size=bs, num_kv_heads=1, head_size=1,
                                     dtype=torch.float32), is_eagle_group=flagged)])
    vc.cache_config.num_gpu_blocks = 1000
    register_all_kvcache_specs(vc)
    s = Scheduler(vllm_config=vc, kv_cache_config=kvc, block_size=bs, log_stats=True,
                  structured_output_manager=StructuredOutputManager(vc))
    c = s.kv_cache_manager.coordinator
    return dict(lookahead=vc.num_lookahead_tokens, prefill=vc.num_prefill_lookahead_tokens,
                hash=vc.num_hash_lookahead_tokens, drop=s.use_eagle_block_drop,
                drop_groups=sorted(c.drop_eagle_group_ids),
                reprefillable=c.num_reprefillable_tokens)


def main():
    v3 = variant("v3")
    n2 = variant("n2", num_nextn_predict_layers=2)
    n3 = variant("n3", num_nextn_predict_layers=3)
    v2 = variant("v2", model_type="deepseek_v2", architectures=["DeepseekV2ForCausalLM"])
    probes = [
        ("v3 K=3", lambda: draft(v3, num_speculative_tokens=3)),
        ("v3 no K, no model", lambda: draft(v3)),
        ("deepseek_v2 K=1", lambda: draft(v2, num_speculative_tokens=1)),
        ("2 modules K=1", lambda: draft(n2, num_speculative_tokens=1)),
        ("2 modules K=3", lambda: draft(n2, num_speculative_tokens=3)),
        ("2 modules K=4", lambda: draft(n2, num_speculative_tokens=4)),
        ("1 module K=3 bs16", lambda: sched(v3, 3, 16, True, True)),
        ("1 module K=3 bs16 legacy", lambda: sched(v3, 3, 16, True, True, legacy=True)),
        ("3 modules K=3 bs2 flagged", lambda: sched(n3, 3, 2, True, True)),
        ("3 modules K=3 bs2 flagged legacy", lambda: sched(n3, 3, 2, True, True, legacy=True)),
        ("3 modules K=3 bs2 unflagged", lambda: sched(n3, 3, 2, True, False)),
        ("3 modules K=3 bs4 flagged", lambda: sched(n3, 3, 4, True, True)),
        ("3 modules K=3 bs2 caching off", lambda: sched(n3, 3, 2, False, True)),
        ("3 modules K=2 bs16", lambda: sched(n3, 2, 16, True, True)),
    ]
    for label, f in probes:
        try:
            print(label, "->", json.dumps(f()), flush=True)
        except Exception as e:      # vLLM refused: its words
            print(label, "-> refused:", type(e).__name__, str(e).splitlines()[:2], flush=True)


if __name__ == "__main__":
    main()
