# ruff: noqa
"""Dev tool (not a test, not run by CI): ../cache_mode_mamba_mixed/oracle_cache_mixed.py (cache
mode over vLLM 0.33.0's real KVCacheManager: one request at a time, look up, allocate the whole
prompt, free) over this folder's traces, which have no Mamba group: its manager is built by
../oracle_mixed.py's `build` directly (the Mamba oracle's own build asserts Mamba's aligned
split), with the config line's `prefix_match_unit` given to vLLM's CacheConfig.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_mixed_pmu/oracle_cache_pmu.py IN.trace.jsonl=OUT.cache.jsonl ...
"""

import functools
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(DATA))
import oracle_mixed  # noqa: E402

cache = oracle_mixed.load("oracle_cache_mixed",
                          DATA / "cache_mode_mamba_mixed" / "oracle_cache_mixed.py")


def build(cfg: dict, *args, **kwargs):
    import vllm.config

    real = vllm.config.CacheConfig
    vllm.config.CacheConfig = functools.partial(real, prefix_match_unit=cfg.get("prefix_match_unit"))
    try:
        return oracle_mixed.build(cfg, refusal=ValueError)
    finally:
        vllm.config.CacheConfig = real


cache.mixed.build = build


if __name__ == "__main__":
    sys.exit(cache.main())
