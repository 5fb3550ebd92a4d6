# ruff: noqa
"""Dev tool (not a test, not run by CI): vLLM 0.33.0's Scheduler and AsyncScheduler over Mamba
groups in "align" mode beside attention groups of other block sizes, no drafts, step by step.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_mamba_mixed/oracle_mamba_mixed.py [--async] IN.trace.jsonl=OUT.expected.jsonl ...

The trace is ../oracle_mamba.py's, its config line's `groups` of "mamba", "full" and
"sliding_window" entries, each optionally with its own `block_size` (else the config line's).
What runs is ../oracle_mamba.py's (sched.py's step loop, `answer`), with the Scheduler built by
`build` below, ../sched_spec_eagle_mixed/oracle_eagle_mixed.py's construction without a draft:

- each group's spec at its own block size, every page one size as vLLM's planning makes them
  (an attention group's head size is lcm / its block, a Mamba state padded to that page;
  asserted equal); the Mamba groups at the config line's block size, which align mode makes
  `mamba_block_size` (MambaModelConfig, the platform's hybrid block sizing);
- vLLM's own `resolve_kv_cache_block_sizes` gives the scheduler block (the lcm of the groups')
  and the hash block (their gcd), passed to the Scheduler and the block hasher as EngineCore
  passes them (core.py); `cache_config.block_size` stays the config line's;
- the start-up check (`_check_enough_kv_cache_memory`, one max_model_len request in
  num_blocks - 1 pages) over those groups, refused as vLLM refuses it (the case's line is
  `{"error": "ValueError: vLLM would refuse to start: ..."}`).
"""

import importlib.util
import json
import math
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent
sys.path.insert(0, str(DATA))


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


oracle_mamba = _load("oracle_mamba", DATA / "oracle_mamba.py")
oracle = oracle_mamba.oracle

import torch  # noqa: E402
from vllm.v1.kv_cache_interface import (  # noqa: E402
    FullAttentionSpec, KVCacheGroupSpec, MambaSpec, SlidingWindowSpec)

TYPES = ("full", "sliding_window", "mamba")


def group_specs(cfg: dict) -> list:
    """The config line's groups, each at its block size, one page size."""
    bs = cfg["block_size"]
    sizes = [g.get("block_size", bs) for g in cfg["groups"]]
    unit = math.lcm(*sizes)
    page = 2 * unit * 4                 # (K and V, 1 head, float32)
    out = []
    for i, (g, size) in enumerate(zip(cfg["groups"], sizes)):
        common = dict(block_size=size, num_kv_heads=1, head_size=unit // size,
                      dtype=torch.float32)
        if g["type"] == "full":
            spec = FullAttentionSpec(**common)
        elif g["type"] == "sliding_window":
            spec = SlidingWindowSpec(**common, sliding_window=int(g["sliding_window"]))
        else:
            ckpt = bool(g.get("checkpoint"))
            spec = MambaSpec(shapes=((1,),), dtypes=(torch.float32,), block_size=size,
                             page_size_padded=page,
                             mamba_type="mamba2" if ckpt else "mamba1",
                             mamba_cache_mode="align", num_speculative_blocks=0,
                             num_prefill_checkpoint_blocks=int(ckpt),
                             prefill_checkpoint_alignment=(g.get("checkpoint_alignment", 1)
                                                           if ckpt else None))
        assert spec.page_size_bytes == page, (spec, page)
        out.append(KVCacheGroupSpec([f"layer{i}"], spec))
    return out


def build(cfg: dict, async_scheduling: bool = False):
    """oracle_mamba.build_mamba_scheduler's construction over groups of their own block sizes."""
    from vllm.config import (CacheConfig, DeviceConfig, KVEventsConfig, ModelConfig,
                             ParallelConfig, SchedulerConfig, VllmConfig)
    from vllm.utils.hashing import get_hash_fn_by_name
    from vllm.v1.core.kv_cache_utils import (get_request_block_hasher, init_none_hash,
                                             resolve_cache_hit_alignment_tokens,
                                             resolve_kv_cache_block_sizes)
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.kv_cache_interface import KVCacheConfig
    from vllm.v1.core.single_type_kv_cache_manager import register_all_kvcache_specs
    from vllm.v1.structured_output import StructuredOutputManager

    bs = cfg["block_size"]
    assert cfg["enable_prefix_caching"], "align mode only"
    model_config = ModelConfig(model=oracle.ensure_tiny_model(oracle.TINY_MODEL_DIR),
                               dtype="float16", seed=0, skip_tokenizer_init=True,
                               max_model_len=cfg["max_model_len"])
    scheduler_config = SchedulerConfig(
        max_num_seqs=cfg["max_num_seqs"], max_num_active_seqs=cfg["max_num_active_seqs"],
        max_num_batched_tokens=cfg["max_num_batched_tokens"],
        max_model_len=cfg["max_model_len"],
        long_prefill_token_threshold=cfg["long_prefill_token_threshold"],
        long_prefill_token_threshold_adaptive=cfg["long_prefill_token_threshold_adaptive"],
        enable_chunked_prefill=cfg["enable_chunked_prefill"], is_encoder_decoder=False,
        policy=cfg["policy"], watermark=cfg["watermark"],
        scheduler_reserve_full_isl=cfg["scheduler_reserve_full_isl"],
        async_scheduling=bool(async_scheduling))
    cache_config = CacheConfig(block_size=bs, gpu_memory_utilization=0.9, cache_dtype="auto",
                               enable_prefix_caching=True,
                               prefix_caching_hash_algo=cfg["hash_algo"],
                               mamba_cache_mode="align", mamba_block_size=bs,
                               **({"prefix_cache_retention_interval":
                                   cfg["prefix_cache_retention_interval"]}
                                  if "prefix_cache_retention_interval" in cfg else {}))
    vllm_config = VllmConfig(
        scheduler_config=scheduler_config, model_config=model_config,
        cache_config=cache_config, parallel_config=ParallelConfig(),
        device_config=DeviceConfig(device="cpu"),
        kv_events_config=(KVEventsConfig(enable_kv_cache_events=True, publisher="null")
                          if cfg.get("kv_events") else None))
    groups = group_specs(cfg)
    kcc = KVCacheConfig(num_blocks=cfg["num_blocks"], kv_cache_tensors=[],
                        kv_cache_groups=groups,
                        prefix_cache_retention_interval=cache_config.prefix_cache_retention_interval)
    needed = sum(-(-g.kv_cache_spec.max_memory_usage_bytes(vllm_config)
                   // g.kv_cache_spec.page_size_bytes) for g in groups)
    if needed > cfg["num_blocks"] - 1:
        # (an exception, not an exit: `answer` records it as the case's line and goes on)
        raise ValueError(f"vLLM would refuse to start: one max_model_len request needs "
                         f"{needed} blocks, {cfg['num_blocks'] - 1} usable")
    cache_config.num_gpu_blocks = cfg["num_blocks"]
    register_all_kvcache_specs(vllm_config)
    sched_bs, hash_bs = resolve_kv_cache_block_sizes(kcc, vllm_config)
    kcc.hash_block_size = hash_bs
    kcc.cache_hit_alignment_tokens = resolve_cache_hit_alignment_tokens(
        kcc, vllm_config, sched_bs, hash_bs)
    cls = vllm_config.scheduler_config.get_scheduler_cls() if async_scheduling else Scheduler
    scheduler = cls(vllm_config=vllm_config, kv_cache_config=kcc,
                    structured_output_manager=StructuredOutputManager(vllm_config),
                    block_size=sched_bs, log_stats=True, hash_block_size=hash_bs)
    assert scheduler.need_mamba_block_aligned_split
    hash_fn = get_hash_fn_by_name(cache_config.prefix_caching_hash_algo)
    init_none_hash(hash_fn)
    hasher = get_request_block_hasher(hash_bs, hash_fn, vllm_config.num_hash_lookahead_tokens)
    return scheduler, hasher, vllm_config


def read_trace(path: str):
    """sched.read_input with the groups held back (its check knows neither Mamba nor a
    group's block_size), then checked here and put back."""
    with open(path) as f:
        first = json.loads(f.readline())
        rest = f.read().splitlines()
    groups = first["config"].get("groups")
    if not (isinstance(groups, list) and groups and all(
            isinstance(g, dict) and g.get("type") in TYPES
            and isinstance(g.get("block_size", 1), int) for g in groups)):
        raise SystemExit(f"{path}: line 1: config.groups must list {', '.join(TYPES)} groups")
    first["config"]["groups"] = [{"type": "full"}]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as tmp:
        tmp.write("\n".join([json.dumps(first), *rest]) + "\n")
        tmp.flush()
        cfg, reqs = oracle.read_input(tmp.name)
    cfg["groups"] = groups
    return cfg, reqs


oracle_mamba.build_mamba_scheduler = build
oracle_mamba.read_trace = read_trace


if __name__ == "__main__":
    sys.exit(oracle_mamba.main())
