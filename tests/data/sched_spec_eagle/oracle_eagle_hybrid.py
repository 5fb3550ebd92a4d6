"""Dev tool (not a test, not run by CI): oracle_eagle.py over hybrid KV cache groups, with the
groups that hold the draft's layers flagged as vLLM's planning flags them.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_spec_eagle/oracle_eagle_hybrid.py IN.trace.jsonl=OUT.expected.jsonl ...

The trace is oracle_eagle.py's, its config line with `"groups"` (sched.py's hybrid groups:
full / sliding_window / chunked_local) and optionally `"eagle_groups"`: the indices of the
groups holding the draft's layers. Those groups get `KVCacheGroupSpec.is_eagle_group` in the
KVCacheConfig the Scheduler is built with, as `kv_cache_planning.get_kv_cache_groups` sets it
for the groups holding `is_draft` layers (v1/core/kv_cache_planning.py:1649-1656). The
coordinator then drops the last matched block in the flagged groups only, or in every group
when none is flagged (kv_cache_coordinator.py:128-137), and only in the legacy hash mode
(`disable_lookahead_block_hashes`): lookahead hashes pass `use_eagle` false, so the groups stay
flagged and none drops. Everything else (the loop, the fake model, the drafts, `skip_drafts`)
is oracle_eagle.py's, imported and run unchanged.

oracle_eagle.build asserts the drop of an unflagged config (every group, legacy mode); with
`eagle_groups` the coordinator's `drop_eagle_group_ids` is shown to that assertion as every
group for the moment of the call, then put back, and asserted here instead: the flagged groups
(legacy), none (lookahead hashes). The summary's `config._effective.speculative` gains
`eagle_group_ids` (the coordinator's flagged groups) and the real `drop_eagle_group_ids`.
"""

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("oracle_eagle", HERE / "oracle_eagle.py")
oracle_eagle = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(oracle_eagle)          # exits with its message when ORACLE_TOOL is unset
oracle = oracle_eagle.oracle

oracle.OPTIONAL_KEYS = oracle.OPTIONAL_KEYS | {"eagle_groups"}


def eagle_groups_of(cfg: dict) -> list[int] | None:
    """The config line's `eagle_groups` (None when absent), checked against its groups."""
    flagged = cfg.get("eagle_groups")
    if flagged is None:
        return None
    groups = cfg.get("groups")
    if groups is None:
        raise SystemExit("config eagle_groups needs groups")
    if not (isinstance(flagged, list) and flagged and len(set(flagged)) == len(flagged)
            and all(type(i) is int and 0 <= i < len(groups) for i in flagged)):
        raise SystemExit("config eagle_groups must be a non-empty list of distinct group "
                         f"indices below {len(groups)}")
    return sorted(flagged)


def build(cfg: dict, k: int):
    """oracle_eagle.build with the `eagle_groups` flagged in the Scheduler's KVCacheConfig."""
    flagged = eagle_groups_of(cfg)
    real_groups, real_build = oracle.build_groups_kv_cache_config, oracle.build_scheduler
    held: dict = {}

    def groups_config(cfg_: dict, vllm_config):
        kv_cache_config = real_groups(cfg_, vllm_config)
        for i in flagged or ():
            kv_cache_config.kv_cache_groups[i].is_eagle_group = True
        return kv_cache_config

    def build_scheduler(*a, **kw):
        scheduler, hasher, vc = real_build(*a, **kw)
        coord = scheduler.kv_cache_manager.coordinator
        held["coord"], held["drop"] = coord, set(coord.drop_eagle_group_ids)
        if coord.drop_eagle_group_ids:
            # (read only by oracle_eagle's assertion before it is put back: the coordinator
            # and its managers took their eagle bits in __init__)
            coord.drop_eagle_group_ids = set(range(len(coord.single_type_managers)))
        return scheduler, hasher, vc

    oracle.build_groups_kv_cache_config, oracle.build_scheduler = groups_config, build_scheduler
    try:
        scheduler, hasher, vc, derived = oracle_eagle.build(cfg, k)
    finally:
        oracle.build_groups_kv_cache_config, oracle.build_scheduler = real_groups, real_build
        if "coord" in held:
            held["coord"].drop_eagle_group_ids = held["drop"]
    coord = held["coord"]
    every = list(range(len(coord.single_type_managers)))
    legacy = derived["use_eagle_block_drop"]
    expect_flagged = flagged if flagged is not None else (every if legacy else [])
    assert sorted(coord.eagle_group_ids) == expect_flagged, (coord.eagle_group_ids, flagged)
    assert sorted(held["drop"]) == (expect_flagged if legacy else []), held["drop"]
    derived.update(eagle_group_ids=sorted(coord.eagle_group_ids),
                   drop_eagle_group_ids=sorted(held["drop"]))
    return scheduler, hasher, vc, derived


oracle_eagle.oracle_spec.build = build


if __name__ == "__main__":
    sys.exit(oracle_eagle.main())
