"""Patch a COPY of the oracle tool (run inside it) so `sched_offload.py` takes sched.py's
`groups` config key (full / sliding_window / chunked_local, one shared pool of num_blocks), as
`sched.py` does (SCHED.md, "Hybrid groups"), with the CPU tier on every group vLLM offloads.

Construction with "groups": one KVCacheGroupSpec per entry, each with `num_layers` layers of the
config's geometry (num_kv_heads, head_size, kv_dtype), layer names model.layers.{k}.attn numbered
across groups; KVCacheConfig(num_blocks, [], groups, prefix_cache_retention_interval = the
CacheConfig's, vLLM default 0); sched.py's startup check (one max_model_len request must fit in
num_blocks - 1 blocks); EngineCore's block-size resolution (hash_block_size passed to the
Scheduler). A GPU block of one group is page x num_layers bytes; vLLM's worker_kv_bytes_per_block
(what sizes a CPU chunk) is the sum over the offloaded groups, so a chunk costs len(groups) times
what one full group's does.

Output with "groups" (without it every byte is the oracle's):
  * a chunk key is [group_idx, hash] (vLLM's OffloadKey = block hash + 4-byte group index) in
    job `keys`, `cpu_evicted` and the summary's `policy_state_end`;
  * job keys are in (group, chunk index) order; jobs also carry `group_sizes` (GPU blocks per
    offloaded group, vLLM's GPULoadStoreSpec.group_sizes);
  * `store_offers[req]` = {"chunks": {group: [chunk indices offered]}, "n_absent": k}.
Checked: on traces without "groups" the copy answers byte for byte as the oracle.
"""
from pathlib import Path

fn = "sched_offload.py"
s = Path(fn).read_text()


def rep(old, new, count=1):
    global s
    assert s.count(old) == count, (old, s.count(old))
    s = s.replace(old, new)


rep('OPTIONAL_KEYS = {"async_scheduling", "kv_offloading_size", "kv_offloading_size_chunks"}',
    'OPTIONAL_KEYS = {"async_scheduling", "kv_offloading_size", "kv_offloading_size_chunks",\n'
    '                 "groups"}\nHYBRID = [False]')

# key -> int (default) or [group, int] (hybrid)
rep('''    return maybe_convert_block_hash(get_offload_block_hash(key))
''', '''    h = maybe_convert_block_hash(get_offload_block_hash(key))
    if HYBRID[0]:
        from vllm.v1.kv_offload.base import get_offload_group_idx
        return [get_offload_group_idx(key), h]
    return h
''')

# chunk bytes: summed over the offloaded groups
rep('''    block_bytes = page * cfg["num_layers"]
''', '''    block_bytes = page * cfg["num_layers"] * len(cfg.get("groups") or [None])
''')

# the KVCacheConfig with groups
rep('''    kv_cache_config = KVCacheConfig(
        num_blocks=cfg["num_blocks"], kv_cache_tensors=[],
        kv_cache_groups=[KVCacheGroupSpec(
            [f"model.layers.{i}.self_attn.attn" for i in range(cfg["num_layers"])], spec)],
    )
    cache_config.num_gpu_blocks = cfg["num_blocks"]
    register_all_kvcache_specs(vllm_config)
''', '''    sched_block_kw = {}
    if cfg.get("groups") is None:
        kv_cache_config = KVCacheConfig(
            num_blocks=cfg["num_blocks"], kv_cache_tensors=[],
            kv_cache_groups=[KVCacheGroupSpec(
                [f"model.layers.{i}.self_attn.attn" for i in range(cfg["num_layers"])], spec)],
        )
    else:
        kv_cache_config = _hybrid_kv_cache_config(cfg, vllm_config)
    cache_config.num_gpu_blocks = cfg["num_blocks"]
    register_all_kvcache_specs(vllm_config)
    if cfg.get("groups") is not None:
        from vllm.v1.core.kv_cache_utils import (
            resolve_cache_hit_alignment_tokens, resolve_kv_cache_block_sizes)
        sbs, hbs = resolve_kv_cache_block_sizes(kv_cache_config, vllm_config)
        assert sbs == hbs == bs, (sbs, hbs, bs)
        kv_cache_config.hash_block_size = hbs
        kv_cache_config.cache_hit_alignment_tokens = resolve_cache_hit_alignment_tokens(
            kv_cache_config, vllm_config, sbs, hbs)
        sched_block_kw = {"hash_block_size": hbs}
''')
rep('''        block_size=bs, log_stats=True)
    hash_fn''', '''        block_size=bs, log_stats=True, **sched_block_kw)
    hash_fn''')

rep('''def read_input(path):''', '''def _hybrid_kv_cache_config(cfg, vllm_config):
    """One group per config["groups"] entry, each of num_layers layers of the config's
    geometry; retention = CacheConfig's; sched.py's startup check."""
    from vllm.v1.kv_cache_interface import ChunkedLocalAttentionSpec, SlidingWindowSpec
    bs, L = cfg["block_size"], cfg["num_layers"]
    geo = dict(block_size=bs, num_kv_heads=cfg["num_kv_heads"], head_size=cfg["head_size"],
               dtype=getattr(torch, cfg["kv_dtype"]))
    groups = []
    for gi, g in enumerate(cfg["groups"]):
        if g["type"] == "full":
            sp = FullAttentionSpec(**geo)
        elif g["type"] == "sliding_window":
            sp = SlidingWindowSpec(**geo, sliding_window=int(g["sliding_window"]))
        else:
            sp = ChunkedLocalAttentionSpec(**geo,
                                           attention_chunk_size=int(g["attention_chunk_size"]))
        groups.append(KVCacheGroupSpec(
            [f"model.layers.{gi * L + i}.attn" for i in range(L)], sp))
    kcc = KVCacheConfig(num_blocks=cfg["num_blocks"], kv_cache_tensors=[],
                        kv_cache_groups=groups,
                        prefix_cache_retention_interval=(
                            vllm_config.cache_config.prefix_cache_retention_interval))
    needed = sum(-(-g.kv_cache_spec.max_memory_usage_bytes(vllm_config)
                   // g.kv_cache_spec.page_size_bytes) for g in groups)
    if needed > cfg["num_blocks"] - 1:
        raise SystemExit(
            f"groups: vLLM would refuse to start: one request of max_model_len "
            f"{cfg['max_model_len']} tokens needs {needed} blocks over the {len(groups)} "
            f"groups but the pool has {cfg['num_blocks'] - 1} usable blocks")
    return kcc


def read_input(path):''')

rep('''    cfg = dict(DEFAULTS)
    cfg.update(OFFLOAD_DEFAULTS)
    cfg.update(user_cfg)
''', '''    HYBRID[0] = "groups" in user_cfg
    if "groups" in user_cfg:
        g = user_cfg["groups"]
        size_key = {"full": None, "sliding_window": "sliding_window",
                    "chunked_local": "attention_chunk_size"}
        if not (isinstance(g, list) and g and all(
                isinstance(x, dict) and x.get("type") in size_key
                and set(x) <= {"type", size_key[x["type"]]}
                and (size_key[x["type"]] is None or (
                    isinstance(x.get(size_key[x["type"]]), int)
                    and not isinstance(x.get(size_key[x["type"]]), bool)
                    and x[size_key[x["type"]]] > 0)) for x in g)):
            raise SystemExit("config groups: a non-empty list of {\\"type\\": \\"full\\"}, "
                             "{\\"type\\": \\"sliding_window\\", \\"sliding_window\\": N}, "
                             "{\\"type\\": \\"chunked_local\\", \\"attention_chunk_size\\": N}")
    cfg = dict(DEFAULTS)
    cfg.update(OFFLOAD_DEFAULTS)
    cfg.update(user_cfg)
''')

# store offers: per group chunk indices
rep('''            assert rid not in self.step_rec["offers"], ("two offers in one step", rid)
            out = o_ps(keys_in, req_context)
            self.step_rec["offers"][rid] = [first, len(keys), n_absent]
''', '''            assert rid not in self.step_rec["offers"], ("two offers in one step", rid)
            if HYBRID[0]:
                by_g = {}
                for k in keys:
                    g, _ = key_hash(k)
                    gi = [c.group_idx for c in cs.config.kv_group_configs].index(g)
                    by_g.setdefault(str(g), []).append(
                        rs.group_states[gi].offload_keys.index(k))
                rec = {"chunks": by_g, "n_absent": n_absent}
            else:
                rec = [first, len(keys), n_absent]
            out = o_ps(keys_in, req_context)
            self.step_rec["offers"][rid] = rec
''')

# job keys in (group, chunk) order
rep('''        order = {k: i for i, k in enumerate(rs.group_states[0].offload_keys)}
''', '''        order = {k: (gi, i) for gi, gs in enumerate(rs.group_states)
                 for i, k in enumerate(gs.offload_keys)}
''')
rep('''        d = {"req": e.req_id, "gpu_blocks": len(gpu.block_ids),
             "chunks": [int(c) for c in cpu.block_ids]}
''', '''        d = {"req": e.req_id, "gpu_blocks": len(gpu.block_ids),
             "chunks": [int(c) for c in cpu.block_ids]}
        if HYBRID[0]:
            d["group_sizes"] = [int(x) for x in gpu.group_sizes]
''')

# per-group-block bytes for the fake worker
rep('''        assert self.block_bytes == self.geo["kv_bytes_per_block"], (''',
    '''        assert self.block_bytes * len(cfg.get("groups") or [None]) == \\
            self.geo["kv_bytes_per_block"], (''')
rep('''            kv_bytes_per_block=self.block_bytes,
''', '''            kv_bytes_per_block=self.geo["kv_bytes_per_block"],
''')
# the --batch mode reads many traces in one process: reset per file (read_input does)
Path(fn).write_text(s)
print("patched", fn)
