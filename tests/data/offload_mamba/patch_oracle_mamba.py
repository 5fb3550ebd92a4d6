"""Dev tool (not a test): patch a COPY of the oracle tool, already patched by
`../offload_hybrid/patch_oracle_hybrid.py`, so that `sched_offload.py` also takes Mamba groups
in its `groups` key: vLLM 0.33.0's real Scheduler + OffloadingConnector over align-mode Mamba
groups (README.md here). Run inside the copy:

    cp -r ORACLE_TOOL /tmp/mbtool && chmod -R u+w /tmp/mbtool && cd /tmp/mbtool
    python3 REPO/tests/data/offload_hybrid/patch_oracle_hybrid.py
    python3 REPO/tests/data/offload_mamba/patch_oracle_mamba.py

What it adds (nothing of vLLM is changed; without a Mamba group every byte is the hybrid
copy's):
  * `{"type": "mamba"}` (Jamba's MambaMixer, mamba1) and `{"type": "mamba", "checkpoint":
    true}` (MambaMixer2: one prefill checkpoint block, alignment 1) group entries, built as
    `../oracle_mamba.py` builds them: MambaSpec(block_size = the attention block size,
    page_size_padded = one attention layer's page, mamba_cache_mode "align"), `num_layers`
    layers a group;
  * CacheConfig(mamba_cache_mode="align", mamba_block_size=block_size), what
    MambaModelConfig.verify_and_update_config sets for a hybrid model with prefix caching;
    prefix caching off with a Mamba group is refused here (vLLM's offloading config needs
    aligned block sizes, `offloading/config.py:113-119`);
  * the optional config key `prefix_cache_retention_interval` (CacheConfig's; default 0,
    `null` = dense), which the connector reads too (`offloading/scheduler.py:206`);
  * `store_offers[req]` is, with a Mamba group, a LIST of offers in call order (vLLM calls
    prepare_store once per Mamba boundary state, `_build_aligned_boundary_store_jobs`, then
    once for the attention chunks, `_build_store_jobs`), each {"chunks": {group: [chunk
    indices]}, "n_absent": k};
  * checks (asserts) that the connector is what EngineCore builds for these groups: every
    group offloaded, Mamba groups with a one-chunk window, `requires_cow_source`, the Mamba
    align size = tokens per chunk, no partial tails (hash block = block), and the summary's
    `config._effective` gains `mamba` (those facts).
"""
from pathlib import Path

fn = "sched_offload.py"
s = Path(fn).read_text()
assert "HYBRID = [False]" in s, "apply patch_oracle_hybrid.py first"


def rep(old, new, count=1):
    global s
    assert s.count(old) == count, (old, s.count(old))
    s = s.replace(old, new)


rep('''                 "groups"}\nHYBRID = [False]''',
    '''                 "groups", "prefix_cache_retention_interval"}
HYBRID = [False]
MAMBA = [False]''')

# --- group validation: mamba entries ---------------------------------------------------
rep('''    HYBRID[0] = "groups" in user_cfg
    if "groups" in user_cfg:
        g = user_cfg["groups"]
''', '''    HYBRID[0] = "groups" in user_cfg
    MAMBA[0] = isinstance(user_cfg.get("groups"), list) and any(
        isinstance(x, dict) and x.get("type") == "mamba" for x in user_cfg["groups"])
    if MAMBA[0]:
        for x in user_cfg["groups"]:
            if isinstance(x, dict) and x.get("type") == "mamba" and not (
                    set(x) <= {"type", "checkpoint"}
                    and isinstance(x.get("checkpoint", False), bool)):
                raise SystemExit('config groups: {"type": "mamba"} or '
                                 '{"type": "mamba", "checkpoint": true}')
        if user_cfg.get("enable_prefix_caching", True) is not True:
            raise SystemExit("Mamba groups with a CPU tier need prefix caching (align mode)")
    if "groups" in user_cfg:
        g = [x for x in user_cfg["groups"]
             if not (isinstance(x, dict) and x.get("type") == "mamba")] or [{"type": "full"}]
''')

# --- CacheConfig: align mode, the Mamba block = the block, retention ---------------------
rep('''        kv_offloading_size=cfg["_kv_offloading_size_gib"],
        kv_offloading_backend="native",
    )
''', '''        kv_offloading_size=cfg["_kv_offloading_size_gib"],
        kv_offloading_backend="native",
        **({"mamba_cache_mode": "align", "mamba_block_size": cfg["block_size"]}
           if MAMBA[0] else {}),
        **({"prefix_cache_retention_interval": cfg["prefix_cache_retention_interval"]}
           if "prefix_cache_retention_interval" in cfg else {}),
    )
''')

# --- the Mamba group spec ------------------------------------------------------------
rep('''        elif g["type"] == "sliding_window":
            sp = SlidingWindowSpec(**geo, sliding_window=int(g["sliding_window"]))
''', '''        elif g["type"] == "sliding_window":
            sp = SlidingWindowSpec(**geo, sliding_window=int(g["sliding_window"]))
        elif g["type"] == "mamba":
            from vllm.v1.kv_cache_interface import MambaSpec
            ckpt = bool(g.get("checkpoint"))
            sp = MambaSpec(shapes=((1,),), dtypes=(torch.float32,), block_size=bs,
                           page_size_padded=FullAttentionSpec(**geo).page_size_bytes,
                           mamba_type="mamba2" if ckpt else "mamba1",
                           mamba_cache_mode="align", num_speculative_blocks=0,
                           num_prefill_checkpoint_blocks=int(ckpt),
                           prefill_checkpoint_alignment=1 if ckpt else None)
''')

# --- after the Scheduler is built: what EngineCore would have built ----------------------
rep('''    hash_fn = get_hash_fn_by_name(cache_config.prefix_caching_hash_algo)
    init_none_hash(hash_fn)
    block_hasher''', '''    if MAMBA[0]:
        _check_mamba_connector(scheduler, cfg, vllm_config, kv_cache_config)
    hash_fn = get_hash_fn_by_name(cache_config.prefix_caching_hash_algo)
    init_none_hash(hash_fn)
    block_hasher''')

rep('''def _hybrid_kv_cache_config(cfg, vllm_config):''', '''MAMBA_FACTS = {}


def _check_mamba_connector(scheduler, cfg, vllm_config, kcc):
    """The connector over Mamba groups is what EngineCore builds (asserted)."""
    from vllm.v1.kv_cache_interface import MambaSpec
    assert vllm_config.cache_config.mamba_cache_mode == "align"
    assert scheduler.need_mamba_block_aligned_split
    assert kcc.has_mamba_layers
    cs = scheduler.connector.connector_scheduler
    c = cs.config
    gcs = c.kv_group_configs
    assert [g.group_idx for g in gcs] == list(range(len(cfg["groups"]))), gcs
    tpc = gcs[0].tokens_per_chunk
    for g, want in zip(gcs, cfg["groups"]):
        is_m = isinstance(g.kv_cache_spec, MambaSpec)
        assert is_m == (want["type"] == "mamba")
        assert g.requires_cow_source == is_m
        if is_m:
            assert g.sliding_window_size_in_chunks == 1, g
    assert cs._mamba_align_size == tpc, (cs._mamba_align_size, tpc)
    assert not c.supports_partial_tail
    MAMBA_FACTS.clear()
    MAMBA_FACTS.update(
        offloaded_groups=[g.group_idx for g in gcs],
        window_chunks=[g.sliding_window_size_in_chunks for g in gcs],
        requires_cow_source=[g.requires_cow_source for g in gcs],
        mamba_align_size=cs._mamba_align_size, alignment_tokens=c.alignment_tokens,
        retention_interval=c.retention_interval,
        supports_partial_tail=c.supports_partial_tail,
        lookup_groups=list(cs._lookup_groups))


def _hybrid_kv_cache_config(cfg, vllm_config):''')

# --- offers: several per request and step with Mamba groups --------------------------
rep('''            assert rid not in self.step_rec["offers"], ("two offers in one step", rid)
            if HYBRID[0]:''', '''            assert MAMBA[0] or rid not in self.step_rec["offers"], (
                "two offers in one step", rid)
            if HYBRID[0]:''')
rep('''            self.step_rec["offers"][rid] = rec
''', '''            if MAMBA[0]:
                self.step_rec["offers"].setdefault(rid, []).append(rec)
            else:
                self.step_rec["offers"][rid] = rec
''')
rep('''        eff.update(extra_effective or {})
''', '''        eff.update(extra_effective or {})
        if MAMBA[0]:
            eff["mamba"] = dict(MAMBA_FACTS)
''')
Path(fn).write_text(s)
print("patched", fn)
