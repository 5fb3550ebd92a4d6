# ruff: noqa
"""Dev tool (not a test, not run by CI): vLLM 0.33.0's Scheduler built over KV cache groups of
different block sizes, shared by ./sched_spec_eagle_mixed/oracle_eagle_mixed.py,
./sched_mamba_mixed/oracle_mamba_mixed.py (and through it
./cache_mode_mamba_mixed/oracle_cache_mixed.py) and ./sched_chunked_mixed/oracle_chunked_mixed.py;
./oracle_mamba.py builds its Scheduler through its `configs`, `engine_config` and `start`.
Needs the oracle's `sched.py` ($ORACLE_TOOL, through ./oracle_batch.py) and vLLM's venv when
its functions run.

`build` is sched.py's `build_scheduler` (and ./oracle_mamba.py's) with these differences:

- each group's spec at its own block size, every page one size as vLLM's planning makes them
  (`unify_kv_cache_spec_page_size`: an attention group's head size is lcm / its block, a Mamba
  state padded to that page; asserted equal);
- vLLM's own `resolve_kv_cache_block_sizes` gives the scheduler block (the lcm of the groups')
  and the hash block (their gcd, or the scheduler block with prefix caching off), passed to the
  Scheduler and the block hasher as EngineCore passes them (core.py); `cache_config.block_size`
  stays the config line's;
- the start-up check (`_check_enough_kv_cache_memory`, one max_model_len request in
  num_blocks - 1 pages) over those groups, refused as vLLM refuses it (`refusal`, the exception
  the caller's loop records).
"""

import importlib.util
import json
import math
import tempfile
from pathlib import Path

# Nothing of vLLM's or the oracle's is imported until a function runs: importing this must not
# import the oracle's sched.py, which reads its target when first imported
# (../sched_spec_mamba/oracle_spec_mamba.py --mtp sets it first).


def load(name: str, path: Path):
    """Another folder's dev tool (not a package) imported as module `name`."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def group_specs(cfg: dict, mode: str, spec_blocks: int = 0) -> list:
    """The config line's groups, each at its block size, one page size, Mamba groups in `mode`
    with `spec_blocks` speculative blocks, the `eagle_groups` flagged."""
    import torch
    from vllm.v1.kv_cache_interface import (ChunkedLocalAttentionSpec, FullAttentionSpec,
                                            KVCacheGroupSpec, MambaSpec, SlidingWindowSpec)

    bs = cfg["block_size"]
    flagged = set(cfg.get("eagle_groups") or ())
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
        elif g["type"] == "chunked_local":
            spec = ChunkedLocalAttentionSpec(
                **common, attention_chunk_size=int(g["attention_chunk_size"]))
        else:
            ckpt = bool(g.get("checkpoint"))
            spec = MambaSpec(shapes=((1,),), dtypes=(torch.float32,),
                             block_size=size if mode == "align" else cfg["max_model_len"],
                             page_size_padded=page,
                             mamba_type="mamba2" if ckpt else "mamba1",
                             mamba_cache_mode=mode, num_speculative_blocks=spec_blocks,
                             num_prefill_checkpoint_blocks=int(ckpt),
                             prefill_checkpoint_alignment=(g.get("checkpoint_alignment", 1)
                                                           if ckpt else None))
        assert spec.page_size_bytes == page, (spec, page)
        out.append(KVCacheGroupSpec([f"layer{i}"], spec, is_eagle_group=i in flagged))
    return out


def build(cfg: dict, async_scheduling: bool = False, spec_blocks: int = 0,
          refusal: type = SystemExit):
    """sched.py's construction over groups of their own block sizes: (scheduler, hasher,
    vllm_config)."""
    # (imported here: ../sched_mamba_mixed_pmu/with_unit.py swaps vllm.config.CacheConfig)
    from vllm.config import CacheConfig

    bs = cfg["block_size"]
    mamba = any(g["type"] == "mamba" for g in cfg["groups"])
    model_config, scheduler_config = configs(cfg, async_scheduling)
    # what MambaModelConfig sets for a hybrid model: align mode with prefix caching, the Mamba
    # block the config line's; without it "none" mode, one block of max_model_len tokens
    mode = "align" if cfg["enable_prefix_caching"] else "none"
    mamba_kw = ({"mamba_cache_mode": mode,
                 "mamba_block_size": bs if mode == "align" else cfg["max_model_len"]}
                if mamba else {})
    cache_config = CacheConfig(block_size=bs, gpu_memory_utilization=0.9, cache_dtype="auto",
                               enable_prefix_caching=cfg["enable_prefix_caching"],
                               prefix_caching_hash_algo=cfg["hash_algo"], **mamba_kw,
                               **({"prefix_cache_retention_interval":
                                   cfg["prefix_cache_retention_interval"]}
                                  if "prefix_cache_retention_interval" in cfg else {}))
    vllm_config = engine_config(cfg, model_config, scheduler_config, cache_config)
    assert vllm_config.scheduler_config.async_scheduling is bool(async_scheduling)
    return start(cfg, vllm_config, group_specs(cfg, mode, spec_blocks), async_scheduling,
                 refusal)


def configs(cfg: dict, async_scheduling: bool):
    """sched.py's ModelConfig (the oracle's tiny model) and SchedulerConfig from the config
    line, built in that order (./oracle_mamba.py's too)."""
    from vllm.config import ModelConfig, SchedulerConfig

    from oracle_batch import oracle  # (exits without $ORACLE_TOOL)

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
    return model_config, scheduler_config


def engine_config(cfg: dict, model_config, scheduler_config, cache_config):
    """The VllmConfig over those, on CPU, with the null KV event publisher if `kv_events`."""
    from vllm.config import DeviceConfig, KVEventsConfig, ParallelConfig, VllmConfig

    return VllmConfig(
        scheduler_config=scheduler_config, model_config=model_config,
        cache_config=cache_config, parallel_config=ParallelConfig(),
        device_config=DeviceConfig(device="cpu"),
        kv_events_config=(KVEventsConfig(enable_kv_cache_events=True, publisher="null")
                          if cfg.get("kv_events") else None))


def start(cfg: dict, vllm_config, groups: list, async_scheduling: bool, refusal: type):
    """What EngineCore does with `groups`: the start-up check, vLLM's own scheduler and hash
    block sizes, the Scheduler (or AsyncScheduler) and the block hasher."""
    from vllm.utils.hashing import get_hash_fn_by_name
    from vllm.v1.core.kv_cache_utils import (get_request_block_hasher, init_none_hash,
                                             resolve_cache_hit_alignment_tokens,
                                             resolve_kv_cache_block_sizes)
    from vllm.v1.core.sched.async_scheduler import AsyncScheduler
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.core.single_type_kv_cache_manager import register_all_kvcache_specs
    from vllm.v1.kv_cache_interface import KVCacheConfig
    from vllm.v1.structured_output import StructuredOutputManager

    cache_config = vllm_config.cache_config
    kcc = KVCacheConfig(num_blocks=cfg["num_blocks"], kv_cache_tensors=[],
                        kv_cache_groups=groups,
                        prefix_cache_retention_interval=cache_config.prefix_cache_retention_interval)
    # _check_enough_kv_cache_memory with the null block held back (one page size: bytes
    # compare as blocks)
    needed = sum(-(-g.kv_cache_spec.max_memory_usage_bytes(vllm_config)
                   // g.kv_cache_spec.page_size_bytes) for g in groups)
    if needed > cfg["num_blocks"] - 1:
        raise refusal(f"vLLM would refuse to start: one max_model_len request needs "
                      f"{needed} blocks, {cfg['num_blocks'] - 1} usable")
    cache_config.num_gpu_blocks = cfg["num_blocks"]
    register_all_kvcache_specs(vllm_config)
    sched_bs, hash_bs = resolve_kv_cache_block_sizes(kcc, vllm_config)
    kcc.hash_block_size = hash_bs
    kcc.cache_hit_alignment_tokens = resolve_cache_hit_alignment_tokens(
        kcc, vllm_config, sched_bs, hash_bs)
    if async_scheduling:
        cls = vllm_config.scheduler_config.get_scheduler_cls()
        assert cls is AsyncScheduler, cls
    else:
        cls = Scheduler
    scheduler = cls(vllm_config=vllm_config, kv_cache_config=kcc,
                    structured_output_manager=StructuredOutputManager(vllm_config),
                    block_size=sched_bs, log_stats=True, hash_block_size=hash_bs)
    hash_fn = get_hash_fn_by_name(cache_config.prefix_caching_hash_algo)
    init_none_hash(hash_fn)
    hasher = get_request_block_hasher(hash_bs, hash_fn, vllm_config.num_hash_lookahead_tokens)
    return scheduler, hasher, vllm_config


def read_trace(path: str, types: tuple):
    """sched.read_input with the groups held back (its check knows neither Mamba nor a
    group's block_size), then checked against `types` here and put back."""
    from oracle_batch import oracle  # (exits without $ORACLE_TOOL)

    with open(path) as f:
        first = json.loads(f.readline())
        rest = f.read().splitlines()
    groups = first["config"].get("groups")
    if not (isinstance(groups, list) and groups and all(
            isinstance(g, dict) and g.get("type") in types
            and isinstance(g.get("block_size", 1), int) for g in groups)):
        raise SystemExit(f"{path}: line 1: config.groups must list {', '.join(types)} groups")
    first["config"]["groups"] = [{"type": "full"}]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as tmp:
        tmp.write("\n".join([json.dumps(first), *rest]) + "\n")
        tmp.flush()
        cfg, reqs = oracle.read_input(tmp.name)
    cfg["groups"] = groups
    return cfg, reqs
