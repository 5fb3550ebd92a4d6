# ruff: noqa
"""Dev tool (not a test, not run by CI): ../offload_spec_more/oracle_offload_spec_more.py
(vLLM 0.33.0's Scheduler, the real OffloadingConnector, drafts over Mamba groups, partial hash
hits) with the opt-in shared-prefix Mamba checkpoint (`CacheConfig.
enable_mamba_shared_prefix_checkpoint`) set, step by step.

    cp -r "$ORACLE_HOME/tool" /tmp/cktool && chmod -R u+w /tmp/cktool && cd /tmp/cktool
    python3 $REPO/tests/data/offload_hybrid/patch_oracle_hybrid.py
    python3 $REPO/tests/data/offload_mamba/patch_oracle_mamba.py
    python3 $REPO/tests/data/offload_mamba_partial/patch_oracle_partial.py
    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/tmp/cktool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/offload_junction/oracle_offload_junction.py [--mtp] [--off] IN=OUT ...

The trace is oracle_offload_spec_more.py's with one more config key,
`"enable_mamba_shared_prefix_checkpoint": true`. Nothing of vLLM is changed and nothing is
copied: this imports oracle_offload_spec_more.py and runs its `main`, after

- accepting the key on the config line (sched_offload's OPTIONAL_KEYS);
- setting it on the CacheConfig handed to VllmConfig (the Scheduler hands it to the
  KVCacheManager, v1/core/sched/scheduler.py:367), `False` with `--off` (the same case with the
  option off, vLLM's default);
- asserting, once the Run is built, that vLLM's scheduler read the value and, with it on, that
  both sides of the feature are on: `Scheduler.mamba_shared_prefix_checkpoint`
  (scheduler.py:461) and every MambaManager's `shared_prefix_checkpoint`
  (kv_cache_manager.py:194-197); and that the connector does not take the divergent-hit
  lookup (`supports_divergent_local_hybrid_hits` False: the Scheduler keeps
  `get_computed_blocks` and its junction, scheduler.py:665-676). A case where vLLM's predicate
  is false is answered with an error line: make_cases.py draws none.
"""

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
KEY = "enable_mamba_shared_prefix_checkpoint"
OFF = "--off" in sys.argv[1:]

_spec = importlib.util.spec_from_file_location(
    "oracle_offload_spec_more", HERE.parent / "offload_spec_more" / "oracle_offload_spec_more.py")
more = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(more)          # exits with its message when ORACLE_TOOL is unpatched
# (only now: importing sched_offload re-executes this process once with sys.argv, which must
# still say --off; taken out before, the re-executed run answered with the option on)
if OFF:
    sys.argv.remove("--off")
base, so_mod = more.base, more.so_mod

from vllm.v1.core.single_type_kv_cache_manager import MambaManager  # noqa: E402

so_mod.OPTIONAL_KEYS = so_mod.OPTIONAL_KEYS | {KEY}
_inner_vllm_config = so_mod.VllmConfig          # oracle_offload_spec's (adds the drafts)


def _flag() -> bool:
    value = base._state["cfg"].get(KEY, False)
    if not isinstance(value, bool):
        raise SystemExit(f"config {KEY} must be true or false")
    return value and not OFF


def vllm_config(**kw):
    kw["cache_config"].enable_mamba_shared_prefix_checkpoint = _flag()
    return _inner_vllm_config(**kw)


so_mod.VllmConfig = vllm_config
_real_init = so_mod.Run.__init__


def run_init(self, *a, **kw):
    _real_init(self, *a, **kw)
    sch, on = self.scheduler, _flag()
    assert sch.cache_config.enable_mamba_shared_prefix_checkpoint is on
    assert not sch.connector.supports_divergent_local_hybrid_hits
    mambas = [m for m in sch.kv_cache_manager.coordinator.single_type_managers
              if isinstance(m, MambaManager)]
    assert mambas
    if on and not sch.mamba_shared_prefix_checkpoint:
        raise SystemExit("vLLM's predicate is false here (no EAGLE group, no partial hash "
                         "hits, or a re-prefill tail): the option changes nothing")
    assert sch.mamba_shared_prefix_checkpoint is on
    assert sch.kv_cache_manager.mamba_shared_prefix_checkpoint is on
    assert all(m.shared_prefix_checkpoint is on for m in mambas)


so_mod.Run.__init__ = run_init


if __name__ == "__main__":
    sys.exit(more.main())
