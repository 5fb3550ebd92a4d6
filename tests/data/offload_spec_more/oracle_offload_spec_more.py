# ruff: noqa
"""Dev tool (not a test, not run by CI): ../offload_spec/oracle_offload_spec.py (vLLM 0.33.0's
Scheduler, the real OffloadingConnector and speculative decoding), imported and patched for
the two combinations it does not run: method "mtp" with the tier, and the tier over Mamba
groups with drafts.

    cp -r /work/shared/oracle/tool /tmp/tmtool && chmod -R u+w /tmp/tmtool && cd /tmp/tmtool
    python3 $REPO/tests/data/offload_hybrid/patch_oracle_hybrid.py
    python3 $REPO/tests/data/offload_mamba/patch_oracle_mamba.py
    python3 $REPO/tests/data/offload_mamba_partial/patch_oracle_partial.py
    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/tmp/tmtool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/offload_spec_more/oracle_offload_spec_more.py [--mtp] IN=OUT ...

The trace is oracle_offload_spec.py's (its docstring: sched_offload's keys, `groups`, the spec
keys), `groups` may list the Mamba copy's `{"type": "mamba"}` / `{"type": "mamba",
"checkpoint": true}` entries and `prefix_match_unit` (the partial copy's). What this adds,
nothing of vLLM changed and nothing copied:

- `--mtp` (a process of its own: sched_offload reads `SCHED_ORACLE_MODEL` when it is
  imported): the target is ../sched_spec_mtp/tiny-deepseek-v3 (DeepSeek-V3 shaped,
  `num_nextn_predict_layers` 1) and the SpeculativeConfig is built with method "mtp" and
  `model` left unset, so vLLM points the draft at the target itself
  (config/speculative.py:1252-1266), as ../sched_spec_mtp/oracle_mtp.py does; the KV cache
  groups stay the trace's (`groups`; the one-group layout without it);
- each Mamba group's MambaSpec gets `num_speculative_blocks` = K, as vLLM's
  `MambaBase.get_kv_cache_spec` builds it (../sched_spec_mamba/oracle_spec_mamba.py does the
  same), before the Scheduler and the connector are built from the KVCacheConfig;
- the summary's `config._effective.speculative` gains `mamba_speculative_blocks` (the
  managers' own `num_speculative_blocks`, asserted K) and, with `--mtp`, what vLLM derived
  for the draft (`model_is_target`, `use_multi_module_mtp`, `draft_model_type`).
"""

import dataclasses
import importlib.util
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent
MTP = "--mtp" in sys.argv[1:]
if MTP:     # (read by sched_offload.py when it is first imported, below)
    os.environ["SCHED_ORACLE_MODEL"] = str(DATA / "sched_spec_mtp" / "tiny-deepseek-v3")
TOOL = Path(os.environ.get("ORACLE_TOOL", ""))
if "MAMBA = [False]" not in (TOOL / "sched_offload.py").read_text() if \
        (TOOL / "sched_offload.py").is_file() else True:
    sys.exit(f"oracle_offload_spec_more: ORACLE_TOOL={str(TOOL)!r} is not a copy of the oracle "
             "tool patched by offload_hybrid/, offload_mamba/ and offload_mamba_partial/")

_spec = importlib.util.spec_from_file_location(
    "oracle_offload_spec", DATA / "offload_spec" / "oracle_offload_spec.py")
base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(base)
so_mod = base.so_mod
assert not MTP or so_mod.TINY_MODEL_DIR.endswith("tiny-deepseek-v3"), so_mod.TINY_MODEL_DIR

from vllm.v1.kv_cache_interface import MambaSpec

_real_spec_config = base.SpeculativeConfig


def spec_config(**kw):
    """oracle_offload_spec's SpeculativeConfig call; for mtp `model` left for vLLM to default
    (it passes the target's path, asserted and dropped)."""
    if kw["method"] == "mtp":
        if not MTP:
            raise SystemExit("config spec_method mtp runs with --mtp, the others without it")
        assert kw.pop("model") == kw["target_model_config"].model
    elif MTP:
        raise SystemExit("config spec_method mtp runs with --mtp, the others without it")
    return _real_spec_config(**kw)


base.SpeculativeConfig = spec_config
_real_groups = so_mod._hybrid_kv_cache_config      # oracle_offload_spec's (flags eagle_groups)


def groups_config(cfg, vllm_config):
    """The Mamba groups' specs with K speculative blocks (vLLM's MambaBase.get_kv_cache_spec:
    `vllm_config.num_speculative_tokens`)."""
    kcc = _real_groups(cfg, vllm_config)
    k = vllm_config.speculative_config.num_speculative_tokens
    assert k == base._state["k"], k
    for g in kcc.kv_cache_groups:
        if isinstance(g.kv_cache_spec, MambaSpec):
            g.kv_cache_spec = dataclasses.replace(g.kv_cache_spec, num_speculative_blocks=k)
    return kcc


so_mod._hybrid_kv_cache_config = groups_config
_real_init = so_mod.Run.__init__


def run_init(self, *a, **kw):
    _real_init(self, *a, **kw)
    sch, vc = self.scheduler, self.vllm_config
    blocks = [m.num_speculative_blocks for m in sch.kv_cache_manager.coordinator
              .single_type_managers if isinstance(m.kv_cache_spec, MambaSpec)]
    assert blocks == [base._state["k"]] * len(blocks), blocks
    derived = base._state["derived"]
    if blocks:
        derived["mamba_speculative_blocks"] = blocks
    if MTP:
        sp = vc.speculative_config
        derived.update(model_is_target=sp.model == vc.model_config.model,
                       use_multi_module_mtp=sp.use_multi_module_mtp(),
                       draft_model_type=sp.draft_model_config.hf_config.model_type)
        assert not sp.use_multi_module_mtp()


so_mod.Run.__init__ = run_init


def main() -> int:
    code = 0
    for pair in [a for a in sys.argv[1:] if a != "--mtp"]:
        inp, outp = pair.split("=")
        rc = base.run_one(inp, outp)
        code = max(code, rc)
        print(f'{{"done": "{inp}", "rc": {rc}}}', file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
