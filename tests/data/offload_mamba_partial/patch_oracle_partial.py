"""Dev tool (not a test): patch a COPY of the oracle tool, already patched by
`../offload_hybrid/patch_oracle_hybrid.py` and `../offload_mamba/patch_oracle_mamba.py`, so that
`sched_offload.py` also takes CacheConfig's `prefix_match_unit` (vLLM's `--prefix-match-unit`)
over Mamba groups: the hash block finer than the block, as `vllm serve` builds it for a real
hybrid model asked for it (README.md here). Run inside the copy:

    cp -r ORACLE_TOOL /tmp/mptool && chmod -R u+w /tmp/mptool && cd /tmp/mptool
    python3 REPO/tests/data/offload_hybrid/patch_oracle_hybrid.py
    python3 REPO/tests/data/offload_mamba/patch_oracle_mamba.py
    python3 REPO/tests/data/offload_mamba_partial/patch_oracle_partial.py

What it adds (nothing of vLLM is changed; a config line without `prefix_match_unit` runs every
byte as the Mamba copy does, so the `../offload_mamba` answers stay byte-identical):
  * the optional config key `prefix_match_unit` (CacheConfig's). The requests are hashed every
    unit tokens (`get_request_block_hasher(hash_block_size)`), the Scheduler gets
    `hash_block_size` = the unit (what `resolve_kv_cache_block_sizes` answers, asserted) and the
    KVCacheConfig its `cache_hit_alignment_tokens` (real code);
  * `_check_mamba_connector` asserts what vLLM derives instead of "no partial tails":
    `tokens_per_hash` = the unit, `supports_partial_tail` exactly when the unit is finer than
    the block and a chunk is one block (`offloading/scheduler.py:273-293`), the partial-tail
    block = the block; the summary's `config._effective.mamba` gains `tokens_per_hash` and
    `partial_tail_block_size`;
  * a key that is no chunk's (a partial tail's: the hash at a boundary inside a block,
    `_make_boundary_key`) is written in a store offer's `chunks` as the string "tN", N its
    token position (`ReqContext.get_offload_key_position`), and sorts in a job's `keys` by that
    position after its group's chunk keys before it.
"""
from pathlib import Path

fn = "sched_offload.py"
s = Path(fn).read_text()
assert "MAMBA = [False]" in s, "apply patch_oracle_mamba.py first"
assert "PARTIAL = [None]" not in s, "already patched"


def rep(old, new, count=1):
    global s
    assert s.count(old) == count, (old, s.count(old))
    s = s.replace(old, new)


rep('''                 "groups", "prefix_cache_retention_interval"}
HYBRID = [False]''', '''                 "groups", "prefix_cache_retention_interval", "prefix_match_unit"}
PARTIAL = [None]     # the config line's prefix_match_unit (None: left out)
HYBRID = [False]''')

# --- read: the unit needs Mamba groups (the copy's other layouts are not checked with it) --
rep('''    HYBRID[0] = "groups" in user_cfg
''', '''    HYBRID[0] = "groups" in user_cfg
    PARTIAL[0] = user_cfg.get("prefix_match_unit")
    if PARTIAL[0] is not None and not (
            isinstance(PARTIAL[0], int) and not isinstance(PARTIAL[0], bool)
            and PARTIAL[0] > 0 and isinstance(user_cfg.get("groups"), list)
            and any(isinstance(x, dict) and x.get("type") == "mamba"
                    for x in user_cfg["groups"])):
        raise SystemExit("prefix_match_unit: a positive integer, with Mamba groups")
''')

# --- CacheConfig ------------------------------------------------------------------------
rep('''        **({"prefix_cache_retention_interval": cfg["prefix_cache_retention_interval"]}
           if "prefix_cache_retention_interval" in cfg else {}),
    )
''', '''        **({"prefix_cache_retention_interval": cfg["prefix_cache_retention_interval"]}
           if "prefix_cache_retention_interval" in cfg else {}),
        **({"prefix_match_unit": PARTIAL[0]} if PARTIAL[0] is not None else {}),
    )
''')

# --- the block sizes vLLM resolves; the hasher at the hash block --------------------------
rep('''        assert sbs == hbs == bs, (sbs, hbs, bs)
''', '''        assert sbs == bs and hbs == (PARTIAL[0] or bs), (sbs, hbs, bs)
''')
rep('''    block_hasher = get_request_block_hasher(bs, hash_fn, vllm_config.num_hash_lookahead_tokens)
''', '''    block_hasher = get_request_block_hasher(PARTIAL[0] or bs, hash_fn,
                                            vllm_config.num_hash_lookahead_tokens)
''')

# --- the connector's partial-tail facts ---------------------------------------------------
rep('''    assert not c.supports_partial_tail
''', '''    hbs = PARTIAL[0] or cfg["block_size"]
    assert c.tokens_per_hash == hbs, (c.tokens_per_hash, hbs)
    assert c.supports_partial_tail == (hbs < cfg["block_size"] and c.blocks_per_chunk == 1), c
    assert cs._partial_tail_block_size == (cfg["block_size"] if c.supports_partial_tail else 0)
    assert scheduler.mamba_partial_cache_hit is (hbs < cfg["block_size"])
''')
rep('''        lookup_groups=list(cs._lookup_groups))
''', '''        lookup_groups=list(cs._lookup_groups))
    if PARTIAL[0] is not None:
        MAMBA_FACTS.update(tokens_per_hash=c.tokens_per_hash,
                           partial_tail_block_size=cs._partial_tail_block_size)
''')

# --- a partial tail's key in an offer, and in a job's keys ---------------------------------
rep('''                    by_g.setdefault(str(g), []).append(
                        rs.group_states[gi].offload_keys.index(k))
''', '''                    ok = rs.group_states[gi].offload_keys
                    by_g.setdefault(str(g), []).append(
                        ok.index(k) if k in ok
                        else f"t{req_context.get_offload_key_position(k)}")
''')
rep('''        order = {k: (gi, i) for gi, gs in enumerate(rs.group_states)
                 for i, k in enumerate(gs.offload_keys)}
        assert all(k in order for k in js.keys)
''', '''        order = {k: (gi, i) for gi, gs in enumerate(rs.group_states)
                 for i, k in enumerate(gs.offload_keys)}
        if PARTIAL[0] is not None:
            # a partial tail's key: by its position, after its group's chunks before it
            from vllm.v1.kv_offload.base import get_offload_group_idx
            gis = [c.group_idx for c in cs.config.kv_group_configs]
            for k in js.keys:
                if k not in order:
                    pos = rs.req_context.get_offload_key_position(k)
                    tpc = cs.config.kv_group_configs[0].tokens_per_chunk
                    order[k] = (gis.index(get_offload_group_idx(k)), pos / tpc - 1)
        assert all(k in order for k in js.keys)
''')
Path(fn).write_text(s)
print("patched", fn)
