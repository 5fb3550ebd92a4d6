# ruff: noqa
"""Dev tool (not a test, not run by CI): patch a COPY of the oracle tool, already patched by
`../offload_hybrid/patch_oracle_hybrid.py`, `../offload_mamba/patch_oracle_mamba.py` and
`../offload_mamba_partial/patch_oracle_partial.py`, so that `sched_offload.py` takes a
`block_size` in an attention group's entry of `groups`: vLLM 0.33.0's real Scheduler +
OffloadingConnector over KV cache groups of several block sizes (README.md here). Run inside
the copy:

    cp -r "$ORACLE_TOOL" /tmp/mxtool && chmod -R u+w /tmp/mxtool && cd /tmp/mxtool
    python3 REPO/tests/data/offload_hybrid/patch_oracle_hybrid.py
    python3 REPO/tests/data/offload_mamba/patch_oracle_mamba.py
    python3 REPO/tests/data/offload_mamba_partial/patch_oracle_partial.py
    python3 REPO/tests/data/offload_mixed/patch_oracle_mixed.py

What it adds (nothing of vLLM is changed; a trace with no group `block_size` runs every byte as
before):
  * `{"type": "full"|"sliding_window"|"chunked_local", ..., "block_size": N}`: that group's
    spec at N tokens, its head size `block_size * head_size / N` so that every group's page is
    one size, as vLLM's planning makes them (../sched_mamba_mixed/oracle_mamba_mixed.py builds
    them so); Mamba groups stay at the config line's block (align mode's `mamba_block_size`);
  * vLLM's own `resolve_kv_cache_block_sizes` gives the Scheduler's block (the groups' lcm) and
    the hash block (their gcd), passed to the Scheduler and the block hasher as EngineCore
    passes them; `cache_config.block_size` stays the config line's;
  * with several sizes the Mamba copy's connector checks (one chunk size) are not made; the
    summary's `config._effective.mixed` records what the connector built instead: each
    group's tokens per block and chunk and hashes per chunk, the alignment and Mamba align
    sizes, whether partial tails are on, the lookup order.
  With `offload_block_size` (kv_connector_extra_config's `block_size`) and several sizes vLLM
  asserts in `build_offloading_config`: the case's line is that AssertionError.
"""
from pathlib import Path

fn = "sched_offload.py"
s = Path(fn).read_text()
assert "PARTIAL = [None]" in s, "apply the hybrid, mamba and partial patches first"
assert "SIZES = [None]" not in s, "already patched"


def rep(old, new, count=1):
    global s
    assert s.count(old) == count, (old, s.count(old))
    s = s.replace(old, new)


rep('''PARTIAL = [None]''', '''PARTIAL = [None]
SIZES = [None]       # the groups' own block sizes (None: a group at the config line's)
MIXED_FACTS = {}''')

# --- validation: a group's block_size held back while the copies check the entries -------
rep('''    MAMBA[0] = isinstance(user_cfg.get("groups"), list) and any(''',
    '''    SIZES[0] = None
    if isinstance(user_cfg.get("groups"), list) and any(
            isinstance(x, dict) and "block_size" in x for x in user_cfg["groups"]):
        if not all(isinstance(x, dict) and (x.get("type") != "mamba" or "block_size" not in x)
                   and isinstance(x.get("block_size", 1), int)
                   and not isinstance(x.get("block_size", 1), bool)
                   and x.get("block_size", 1) > 0 for x in user_cfg["groups"]):
            raise SystemExit("config groups: block_size a positive integer, not on a Mamba group")
        SIZES[0] = [x.pop("block_size", None) for x in user_cfg["groups"]]
    MAMBA[0] = isinstance(user_cfg.get("groups"), list) and any(''')
rep('''    cfg = dict(DEFAULTS)
    cfg.update(OFFLOAD_DEFAULTS)''', '''    if SIZES[0] is not None:
        for x, n in zip(user_cfg["groups"], SIZES[0]):
            if n is not None:
                x["block_size"] = n
    cfg = dict(DEFAULTS)
    cfg.update(OFFLOAD_DEFAULTS)''')

# --- each group's spec at its own block, one page size -----------------------------------
rep('''    for gi, g in enumerate(cfg["groups"]):
        if g["type"] == "full":
            sp = FullAttentionSpec(**geo)''', '''    base_geo = dict(geo)
    for gi, g in enumerate(cfg["groups"]):
        geo = dict(base_geo)
        if g.get("block_size") is not None:
            size = g["block_size"]
            assert bs * cfg["head_size"] % size == 0, ("one page size", bs, size)
            geo.update(block_size=size, head_size=bs * cfg["head_size"] // size)
        if g["type"] == "full":
            sp = FullAttentionSpec(**geo)''')
rep('''        groups.append(KVCacheGroupSpec(
            [f"model.layers.{gi * L + i}.attn" for i in range(L)], sp))''',
    '''        assert sp.page_size_bytes == FullAttentionSpec(**base_geo).page_size_bytes, sp
        groups.append(KVCacheGroupSpec(
            [f"model.layers.{gi * L + i}.attn" for i in range(L)], sp))''')

# --- the Scheduler's and the hasher's blocks: vLLM's own resolution ------------------------
rep('''        assert sbs == bs and hbs == (PARTIAL[0] or bs), (sbs, hbs, bs)''',
    '''        if SIZES[0] is None:
            assert sbs == bs and hbs == (PARTIAL[0] or bs), (sbs, hbs, bs)
        else:
            import math
            sizes = [n or bs for n in SIZES[0]]
            assert PARTIAL[0] is None, "prefix_match_unit with several block sizes: not built"
            assert (sbs, hbs) == (math.lcm(*sizes), math.gcd(*sizes)), (sbs, hbs, sizes)''')
rep('''        sched_block_kw = {"hash_block_size": hbs}''', '''        sched_block_kw = {"hash_block_size": hbs}
        if SIZES[0] is not None:
            bs = sbs''')
rep('''    if MAMBA[0]:
        _check_mamba_connector(scheduler, cfg, vllm_config, kv_cache_config)''',
    '''    if MAMBA[0] and SIZES[0] is None:
        _check_mamba_connector(scheduler, cfg, vllm_config, kv_cache_config)
    if SIZES[0] is not None:
        _mixed_facts(scheduler)''')
rep('''    block_hasher = get_request_block_hasher(PARTIAL[0] or bs, hash_fn,''',
    '''    block_hasher = get_request_block_hasher(
        PARTIAL[0] or (kv_cache_config.hash_block_size if SIZES[0] is not None else bs), hash_fn,''')
rep('''MAMBA_FACTS = {}
''', '''MAMBA_FACTS = {}


def _mixed_facts(scheduler):
    """What the connector built over groups of several block sizes (recorded, not asserted)."""
    cs = scheduler.connector.connector_scheduler
    c = cs.config
    MIXED_FACTS.clear()
    MIXED_FACTS.update(
        tokens_per_block=[g.tokens_per_block for g in c.kv_group_configs],
        tokens_per_chunk=[g.tokens_per_chunk for g in c.kv_group_configs],
        hashes_per_chunk=[g.hashes_per_chunk for g in c.kv_group_configs],
        window_chunks=[g.sliding_window_size_in_chunks for g in c.kv_group_configs],
        blocks_per_chunk=c.blocks_per_chunk, tokens_per_hash=c.tokens_per_hash,
        alignment_tokens=c.alignment_tokens, mamba_align_size=cs._mamba_align_size,
        supports_partial_tail=c.supports_partial_tail, lookup_groups=list(cs._lookup_groups),
        scheduler_block_size=scheduler.block_size)
''')
rep('''        if MAMBA[0]:
            eff["mamba"] = dict(MAMBA_FACTS)''', '''        if MAMBA[0] and SIZES[0] is None:
            eff["mamba"] = dict(MAMBA_FACTS)
        if SIZES[0] is not None:
            eff["mixed"] = dict(MIXED_FACTS)''')
Path(fn).write_text(s)
print("patched", fn)
