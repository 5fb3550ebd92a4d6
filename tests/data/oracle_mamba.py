"""Dev tool (not a test, not run by CI): vLLM 0.33.0's real Scheduler over Mamba groups.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/oracle_mamba.py [--async] IN.trace.jsonl=OUT.expected.jsonl ...

The oracle's `sched.py` (in $ORACLE_TOOL, the oracle's tool folder) has no Mamba groups. This
builds what `EngineCore` hands the Scheduler for a hybrid Mamba model with prefix caching on
(`MambaModelConfig` then sets `mamba_cache_mode='align'` and `mamba_block_size` to the
attention block size; without prefix caching "none" mode, and the block size EngineCore sets
once planned, the groups' smallest: an attention-free model's one Mamba group makes it
max_model_len) and drives it with `sched.py`'s own step loop (`run` / `run_async`,
imported, so the lines are exactly the format of the other scheduler fixtures): only the
Scheduler's construction is ours.

The trace's config line is `sched.py`'s, with `"groups"` a list of `{"type": "mamba"}` and
`{"type": "full"}` in group order (Jamba, kvcli's `jamba-v0.1`: seven Mamba groups, then the
full-attention group, block size 80). Every group gets the same page size (a Mamba state is
padded up to the attention page, as vLLM pads), one layer per group. Jamba's Mamba layers
(`MambaMixer`, mamba1) declare no prefill checkpoint blocks and no speculative blocks; the
hash block size equals the block size, so no partial-block hits and no shared-prefix
checkpoints (`Scheduler.mamba_partial_cache_hit` is False). `{"type": "mamba", "checkpoint":
true}` is a Mamba2 layer instead (`MambaMixer2`: one prefill checkpoint block, alignment 1);
vLLM uses checkpoints only when every Mamba group has them. `"checkpoint_alignment": N` beside
it is the spec's `prefill_checkpoint_alignment` (a Gated DeltaNet layer on FlashInfer's kernel
declares its checkpoint grid: the Mamba block, or lcm(prefix_match_unit, 64)); the Scheduler
reads the first Mamba group's, each MambaManager its own.

A config line's `"prefix_match_unit": N` is vLLM's `--prefix-match-unit` (CacheConfig's): the
requests are hashed every N tokens, and with N finer than the block the Scheduler runs with
partial hash hits (`mamba_partial_cache_hit`; what `resolve_kv_cache_block_sizes` and the
coordinator decide from the groups, real code).
"""

import json
import os
import sys
import tempfile
from pathlib import Path

# the oracle's tool folder, named by the one who runs this (it lives outside this repository;
# the tests read only the answers recorded here)
TOOL = os.environ.get("ORACLE_TOOL", "")
VENV_HINT = "~/.cache/vllm-oracle/venv/bin/python"
if not TOOL or not (Path(TOOL) / "sched.py").is_file():
    sys.exit(f"oracle_mamba: no oracle's sched.py in ORACLE_TOOL={TOOL!r} (set it to the "
             "oracle's tool folder)")
sys.path.insert(0, TOOL)
try:
    # (first on the path: the oracle's sched.py, not the standard library's sched)
    import sched as oracle
except ImportError as err:     # another interpreter: vLLM's dependencies are missing
    sys.exit(f"oracle_mamba: vLLM does not import here ({err}); run me with the oracle "
             f"venv's interpreter, {VENV_HINT}")
# the configs and the start shared with the mixed-block oracles (this folder's script)
import oracle_mixed

# the same driver call and error line as the plain scheduler oracle (this folder's script)
from oracle_batch import answer

GROUP_TYPES = ("mamba", "full")


def kv_cache_groups(groups: list, block_size: int, mode: str = "align",
                    mamba_block_size: int | None = None) -> list:
    """One KVCacheGroupSpec per entry; a Mamba state padded to the attention page. ``mode``
    "none" (prefix caching off): vLLM's Mamba block is ``mamba_block_size`` (max_model_len)."""
    import torch
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheGroupSpec, MambaSpec

    full = FullAttentionSpec(block_size=block_size, num_kv_heads=1, head_size=1,
                             dtype=torch.float32)
    out = []
    for i, g in enumerate(groups):
        if g["type"] == "full":
            spec = full
        else:
            # "checkpoint": true is a Mamba2 layer (MambaMixer2.get_kv_cache_spec): it exports
            # the block-boundary state from inside a chunk (one checkpoint block, alignment 1;
            # "checkpoint_alignment": N another, e.g. a Gated DeltaNet layer's grid)
            ckpt = bool(g.get("checkpoint"))
            align = g.get("checkpoint_alignment", 1)
            spec = MambaSpec(shapes=((1,),), dtypes=(torch.float32,),
                             block_size=mamba_block_size or block_size,
                             page_size_padded=full.page_size_bytes,
                             mamba_type="mamba2" if ckpt else "mamba1",
                             mamba_cache_mode=mode, num_speculative_blocks=0,
                             num_prefill_checkpoint_blocks=int(ckpt),
                             prefill_checkpoint_alignment=align if ckpt else None)
        out.append(KVCacheGroupSpec([f"layer{i}"], spec))
    return out


def build_mamba_scheduler(cfg: dict, async_scheduling: bool = False):
    """`sched.build_scheduler`'s construction with align-mode Mamba groups."""
    # (imported here: a caller may swap vllm.config's names while this runs)
    from vllm.config import CacheConfig

    bs = cfg["block_size"]
    model_config, scheduler_config = oracle_mixed.configs(cfg, async_scheduling)
    # What MambaModelConfig.verify_and_update_config sets for a hybrid model with prefix
    # caching: align mode, the Mamba block size = the attention block size; without it
    # "none" mode, one Mamba block of max_model_len tokens a request.
    mode = "align" if cfg["enable_prefix_caching"] else "none"
    mamba_bs = bs if mode == "align" else cfg["max_model_len"]
    cache_config = CacheConfig(block_size=bs, gpu_memory_utilization=0.9, cache_dtype="auto",
                               enable_prefix_caching=cfg["enable_prefix_caching"],
                               prefix_caching_hash_algo=cfg["hash_algo"],
                               mamba_cache_mode=mode, mamba_block_size=mamba_bs,
                               prefix_match_unit=cfg.get("prefix_match_unit"),
                               **({"prefix_cache_retention_interval":
                                   cfg["prefix_cache_retention_interval"]}
                                  if "prefix_cache_retention_interval" in cfg else {}))
    vllm_config = oracle_mixed.engine_config(cfg, model_config, scheduler_config, cache_config)
    assert vllm_config.cache_config.mamba_cache_mode == mode
    groups = kv_cache_groups(cfg["groups"], bs, mode, mamba_bs)
    if mode == "none":
        # EngineCore._initialize_kv_caches sets cache_config.block_size to the groups'
        # smallest block once planned: an attention-free model's one Mamba group makes it
        # max_model_len, the scheduler's block (with an attention group it stays bs)
        vllm_config.cache_config.block_size = min(g.kv_cache_spec.block_size for g in groups)
    # (the start-up check, vLLM's block sizes and the Scheduler as ./oracle_mixed.py's)
    scheduler, hasher, vllm_config = oracle_mixed.start(cfg, vllm_config, groups,
                                                        async_scheduling, SystemExit)
    sched_bs, hash_bs = scheduler.block_size, scheduler.hash_block_size
    # ("none" mode: vLLM's resolution gives the Mamba block, max_model_len, as the scheduler's
    # and the hash block size, which EngineCore passes on as they are)
    assert mode == "none" or (sched_bs == bs
                              and hash_bs == (cfg.get("prefix_match_unit") or bs)), \
        (sched_bs, hash_bs, bs)
    assert scheduler.need_mamba_block_aligned_split == (mode == "align")
    assert scheduler.mamba_partial_cache_hit is (hash_bs < sched_bs)
    return scheduler, hasher, vllm_config


def read_trace(path: str):
    """sched.read_input, whose group check knows no Mamba: ours checks, then it reads."""
    with open(path) as f:
        first = json.loads(f.readline())
    groups = first["config"].get("groups")
    if not (isinstance(groups, list) and groups
            and all(isinstance(g, dict) and g.get("type") in GROUP_TYPES for g in groups)
            and any(g["type"] == "mamba" for g in groups)):
        raise SystemExit(f"{path}: line 1: config.groups must list mamba and full groups")
    first["config"]["groups"] = [{"type": "full"}]     # passes sched.read_input's check
    unit = first["config"].pop("prefix_match_unit", None)      # (sched.py knows no such key)
    with open(path) as f:
        rest = f.read().splitlines()[1:]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as tmp:
        tmp.write("\n".join([json.dumps(first), *rest]) + "\n")
        tmp.flush()
        cfg, reqs = oracle.read_input(tmp.name)
    cfg["groups"] = groups
    if unit is not None:
        cfg["prefix_match_unit"] = unit
    return cfg, reqs


def main() -> int:
    asyn = "--async" in sys.argv[1:]
    oracle.build_scheduler = build_mamba_scheduler     # the loop is sched.py's, the build ours
    rc = 0
    for pair in [a for a in sys.argv[1:] if a != "--async"]:
        inp, outp = pair.split("=", 1)
        cfg, reqs = read_trace(inp)
        if asyn:
            cfg["async_scheduling"] = True
        rc = answer(inp, outp, cfg, reqs) or rc
    return rc


if __name__ == "__main__":
    sys.exit(main())
