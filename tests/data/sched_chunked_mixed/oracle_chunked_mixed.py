# ruff: noqa
"""Dev tool (not a test, not run by CI): vLLM 0.33.0's schedulers, without drafts, over KV
cache groups of different block sizes (a chunked local attention group among them), step by
step.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_chunked_mixed/oracle_chunked_mixed.py IN.trace.jsonl=OUT.expected.jsonl ...

The trace is the oracle's `sched.py` trace with `groups` (full, sliding_window, chunked_local),
each group with its own `block_size`. What runs is sched.py's own step loop (`run`, or
`run_async` by the config line, through ../oracle_batch.py's `answer`), with its
`build_scheduler` replaced by `build` below: sched.py's construction with these differences,
the ones ../sched_spec_eagle_mixed/oracle_eagle_mixed.py makes for its drafts:

- each group's spec at its own block size, every page one size as vLLM's planning makes them
  (`unify_kv_cache_spec_page_size`: a group's head size is the lcm / its block; asserted);
- vLLM's own `resolve_kv_cache_block_sizes` gives the scheduler block (the lcm of the groups')
  and the hash block (their gcd, or the scheduler block with prefix caching off), passed to
  the Scheduler and the block hasher as EngineCore passes them (core.py);
- the start-up check (`_check_enough_kv_cache_memory`, one max_model_len request in
  num_blocks - 1 pages) over those groups, refused as vLLM refuses it.
"""

import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from oracle_batch import answer, oracle  # noqa: E402  (exits without $ORACLE_TOOL)

import torch  # noqa: E402
from vllm.v1.kv_cache_interface import (  # noqa: E402
    ChunkedLocalAttentionSpec, FullAttentionSpec, KVCacheGroupSpec, SlidingWindowSpec)


def group_specs(cfg: dict) -> list:
    """The config line's groups, each at its block size, one page size."""
    sizes = [g.get("block_size", cfg["block_size"]) for g in cfg["groups"]]
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
            raise SystemExit(f"config groups[{i}]: type {g['type']!r} is not modelled here")
        assert spec.page_size_bytes == page, (spec, page)
        out.append(KVCacheGroupSpec([f"layer{i}"], spec))
    return out


def build(cfg: dict, async_scheduling: bool = False):
    """sched.py's `build_scheduler` over groups of their own block sizes."""
    from vllm.config import (CacheConfig, DeviceConfig, KVEventsConfig, ModelConfig,
                             ParallelConfig, SchedulerConfig, VllmConfig)
    from vllm.utils.hashing import get_hash_fn_by_name
    from vllm.v1.core.kv_cache_utils import (get_request_block_hasher, init_none_hash,
                                             resolve_cache_hit_alignment_tokens,
                                             resolve_kv_cache_block_sizes)
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.core.single_type_kv_cache_manager import register_all_kvcache_specs
    from vllm.v1.kv_cache_interface import KVCacheConfig
    from vllm.v1.structured_output import StructuredOutputManager

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
    cache_config = CacheConfig(block_size=cfg["block_size"], gpu_memory_utilization=0.9,
                               cache_dtype="auto",
                               enable_prefix_caching=cfg["enable_prefix_caching"],
                               prefix_caching_hash_algo=cfg["hash_algo"],
                               **({"prefix_cache_retention_interval":
                                   cfg["prefix_cache_retention_interval"]}
                                  if "prefix_cache_retention_interval" in cfg else {}))
    vllm_config = VllmConfig(
        scheduler_config=scheduler_config, model_config=model_config,
        cache_config=cache_config, parallel_config=ParallelConfig(),
        device_config=DeviceConfig(device="cpu"),
        kv_events_config=(KVEventsConfig(enable_kv_cache_events=True, publisher="null")
                          if cfg.get("kv_events") else None))
    assert vllm_config.scheduler_config.async_scheduling is bool(async_scheduling)
    groups = group_specs(cfg)
    kcc = KVCacheConfig(num_blocks=cfg["num_blocks"], kv_cache_tensors=[],
                        kv_cache_groups=groups,
                        prefix_cache_retention_interval=cache_config.prefix_cache_retention_interval)
    # _check_enough_kv_cache_memory with the null block held back (one page size: bytes
    # compare as blocks)
    needed = sum(-(-g.kv_cache_spec.max_memory_usage_bytes(vllm_config)
                   // g.kv_cache_spec.page_size_bytes) for g in groups)
    if needed > cfg["num_blocks"] - 1:
        raise SystemExit(f"vLLM would refuse to start: one max_model_len request needs "
                         f"{needed} blocks, {cfg['num_blocks'] - 1} usable")
    cache_config.num_gpu_blocks = cfg["num_blocks"]
    register_all_kvcache_specs(vllm_config)
    sched_bs, hash_bs = resolve_kv_cache_block_sizes(kcc, vllm_config)
    kcc.hash_block_size = hash_bs
    kcc.cache_hit_alignment_tokens = resolve_cache_hit_alignment_tokens(
        kcc, vllm_config, sched_bs, hash_bs)
    if async_scheduling:
        from vllm.v1.core.sched.async_scheduler import AsyncScheduler
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


def main() -> int:
    oracle.build_scheduler = build      # the loop is sched.py's, the build ours
    rc = 0
    for pair in sys.argv[1:]:
        inp, outp = pair.split("=", 1)
        cfg, reqs = oracle.read_input(inp)
        try:
            rc = answer(inp, outp, cfg, reqs) or rc
        except SystemExit as err:       # (the start-up check above: not an Exception)
            with open(outp, "w") as out:
                out.write(json.dumps({"error": f"SystemExit: {err}"}) + "\n")
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
