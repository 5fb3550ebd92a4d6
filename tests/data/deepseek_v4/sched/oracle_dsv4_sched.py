# ruff: noqa
"""Dev tool (not a test, not run by CI): vLLM 0.33.0's schedulers over DeepSeek-V4's five KV
cache groups, step by step.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/work/shared/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src $R/venv/bin/python \\
        tests/data/deepseek_v4/sched/oracle_dsv4_sched.py IN.trace.jsonl=OUT.expected.jsonl ...

The trace is the oracle's `sched.py` trace whose `groups` names the model
(`[{"type": "deepseek_v4", "model": "tiny-dsv4"}]`). What runs is sched.py's own step loop
(`run`, or `run_async` by the config line, through ../../oracle_batch.py's `answer`), with its
`build_scheduler` replaced by `build` here: ../../oracle_mixed.py's construction (sched.py's
configs, the start-up check, vLLM's `resolve_kv_cache_block_sizes` for the scheduler block,
256, and the hash block, 4, passed to the Scheduler and the block hasher as EngineCore passes
them) over tiny-dsv4's groups as the engine core hands them to the scheduler
(../managers/record.py's `v4_groups`: each group's first layer's spec, vLLM's own
SlidingWindowMLASpec / MLAAttentionSpec, from ../answers.json), and the cache config's block
size then set to the smallest prefix-cacheable group's (4), as core.py:334-352 sets it.

Beside each answer, `OUT.blocks.jsonl` (OUT named `*.expected.jsonl`): after every schedule()
call that scheduled tokens, each scheduled request's block ids in each of the five groups
(`KVCacheManager.get_block_ids`: a sliding group's blocks below its window are the null
block 0), one line a call: `{request id: [[group 0's ids], ..., [group 4's]]}`.
"""

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
from oracle_batch import answer, oracle  # noqa: E402  (exits without $ORACLE_TOOL)
import oracle_mixed  # noqa: E402

record = oracle_mixed.load("dsv4_managers_record", HERE.parent / "managers" / "record.py")
MODEL = [{"type": "deepseek_v4", "model": "tiny-dsv4"}]
TABLES: list = []       # (the block tables after each schedule() of the trace being answered)


def build(cfg, async_scheduling=False):
    from vllm.config import CacheConfig

    model_config, scheduler_config = oracle_mixed.configs(cfg, async_scheduling)
    cache_config = CacheConfig(block_size=cfg["block_size"], gpu_memory_utilization=0.9,
                               cache_dtype="auto",
                               enable_prefix_caching=cfg["enable_prefix_caching"],
                               prefix_caching_hash_algo=cfg["hash_algo"])
    vllm_config = oracle_mixed.engine_config(cfg, model_config, scheduler_config, cache_config)
    assert vllm_config.scheduler_config.async_scheduling is bool(async_scheduling)
    groups = record.v4_groups()
    out = oracle_mixed.start(cfg, vllm_config, groups, async_scheduling, SystemExit)
    cache_config.block_size = min(g.kv_cache_spec.block_size for g in groups
                                  if g.kv_cache_spec.prefix_cacheable)
    sched = out[0]
    schedule = sched.schedule

    def schedule_and_look():
        """schedule(), then each scheduled request's block ids in every group (what the
        batch's forward reads), one row a call that scheduled tokens."""
        so = schedule()
        if so.num_scheduled_tokens:
            TABLES.append({rid: [list(ids) for ids in sched.kv_cache_manager.get_block_ids(rid)]
                           for rid in so.num_scheduled_tokens})
        return so

    sched.schedule = schedule_and_look
    # (the groups' lcm and gcd; prefix caching off: the scheduler block for both)
    assert (sched.kv_cache_manager.coordinator.scheduler_block_size,
            sched.kv_cache_manager.block_pool.hash_block_size) == (
        256, 4 if cfg["enable_prefix_caching"] else 256)
    return out


def read_trace(path):
    """sched.read_input with the model's groups held back (it knows only its own kinds)."""
    with open(path) as f:
        first = json.loads(f.readline())
        rest = f.read().splitlines()
    if first["config"].get("groups") != MODEL:
        raise SystemExit(f"{path}: line 1: config.groups must be {MODEL}")
    first["config"]["groups"] = [{"type": "full"}]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as tmp:
        tmp.write("\n".join([json.dumps(first), *rest]) + "\n")
        tmp.flush()
        cfg, reqs = oracle.read_input(tmp.name)
    cfg["groups"] = MODEL
    return cfg, reqs


def main() -> int:
    oracle.build_scheduler = build      # the loop is sched.py's, the build ours
    rc = 0
    for pair in sys.argv[1:]:
        inp, outp = pair.split("=", 1)
        cfg, reqs = read_trace(inp)
        TABLES.clear()
        try:
            rc = answer(inp, outp, cfg, reqs) or rc
            with open(outp.replace(".expected.", ".blocks."), "w") as out:
                out.writelines(json.dumps(t) + "\n" for t in TABLES)
        except SystemExit as err:       # (the start-up check: not an Exception)
            with open(outp, "w") as out:
                out.write(json.dumps({"error": f"SystemExit: {err}"}) + "\n")
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
