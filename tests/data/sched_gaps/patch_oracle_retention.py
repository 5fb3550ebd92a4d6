"""Dev tool (not a test): let a copy of the oracle's `sched_offload.py`, already patched by
`../offload_hybrid/patch_oracle_hybrid.py`, take `sched.py`'s `prefix_cache_retention_interval`
key (README.md here). The patched copies build vLLM's `CacheConfig` without it, so every hybrid
CPU-tier case ran at vLLM's default 0, and kvcli's store rule for a positive interval
(`kvcore/offload/hybrid_stores.py`, `reachable_mask`) was never checked. The key goes to
`CacheConfig` as `--prefix-cache-retention-interval` does; without it the copy is unchanged.

    cd /tmp/hytool && python3 $REPO/tests/data/sched_gaps/patch_oracle_retention.py
"""

from pathlib import Path

p = Path("sched_offload.py")
s = p.read_text()


def rep(old: str, new: str) -> None:
    global s
    assert s.count(old) == 1, old     # the hybrid patch applied, this one not yet
    s = s.replace(old, new)


rep('"kv_offloading_size_chunks",\n                 "groups"}',
    '"kv_offloading_size_chunks",\n                 "groups", "prefix_cache_retention_interval"}')
rep('        kv_offloading_backend="native",\n',
    '        kv_offloading_backend="native",\n'
    '        **({"prefix_cache_retention_interval": cfg["prefix_cache_retention_interval"]}\n'
    '           if "prefix_cache_retention_interval" in cfg else {}),\n')
p.write_text(s)
print("patched sched_offload.py (retention)")
