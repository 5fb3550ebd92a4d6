"""Dev tool (not a test, not run by CI): vLLM 0.33.0's real schedulers with MTP speculative
decoding (method "mtp") over a tiny DeepSeek-V3 target, step by step.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_spec_mtp/oracle_mtp.py IN.trace.jsonl=OUT.expected.jsonl ...

The trace is oracle_eagle.py's with `"spec_method": "mtp"` (absent: mtp; any other method is
refused here). Everything runs through ../sched_spec_eagle/oracle_eagle.py (imported, not
copied), which runs ../sched_spec/oracle_spec.py's loop and fake model; this file changes
only what the Scheduler is built from:

- the target: `sched.py`'s ModelConfig reads `SCHED_ORACLE_MODEL`, set here (before the
  oracle is imported) to `tiny-deepseek-v3/` (a DeepSeek-V3-shaped config.json, MLA,
  `num_nextn_predict_layers` 1);
- the SpeculativeConfig: `method="mtp"` with `model` left unset, so vLLM itself points the
  draft at the target (config/speculative.py:1252-1266); oracle_eagle passes the target's
  path, which is asserted equal and dropped;
- the KV cache group: one `MLAAttentionSpec` group holding the target's layers and the MTP
  layer, flagged `is_eagle_group` as kv_cache_planning.py:1649-1656 flags the group holding
  the draft's layers when the config's `use_eagle_block_drop()` (true for mtp by default);
  the scheduler's behaviour for one group is the same flagged or not
  (kv_cache_coordinator.py:130-137), but the multi-module block-size check reads the flag;
- the summary's `_effective.speculative` gains what vLLM derived for the draft (its
  architecture and model_type, `n_predict`, `use_multi_module_mtp`, whether `model` became
  the target) and the group's flag. oracle_eagle's assertions (K lookahead slots, prefill
  lookahead 1, hash lookahead 1 with caching unless `disable_lookahead_block_hashes`) run
  unchanged: a case that breaks one is answered with the AssertionError.
"""

import functools
import importlib.util
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET = HERE / "tiny-deepseek-v3"
os.environ["SCHED_ORACLE_MODEL"] = str(TARGET)  # read by sched.py when oracle_eagle imports it

_spec = importlib.util.spec_from_file_location(
    "oracle_eagle", HERE.parent / "sched_spec_eagle" / "oracle_eagle.py")
oracle_eagle = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(oracle_eagle)          # exits with its message when ORACLE_TOOL is unset
oracle_spec, oracle = oracle_eagle.oracle_spec, oracle_eagle.oracle
assert oracle.TINY_MODEL_DIR == str(TARGET), oracle.TINY_MODEL_DIR

from vllm.v1.kv_cache_interface import MLAAttentionSpec

TARGET_CFG = json.loads((TARGET / "config.json").read_text())
_real_spec_config = oracle_eagle.SpeculativeConfig


def spec_config(**kw):
    """oracle_eagle's SpeculativeConfig call, with `model` left for vLLM to default (mtp)."""
    assert kw["method"] == "mtp", kw["method"]
    assert kw.pop("model") == kw["target_model_config"].model
    return _real_spec_config(**kw)


oracle_eagle.SpeculativeConfig = spec_config


def mla_spec(block_size: int, **_):
    """The tiny target's MLA layer spec (kv_lora_rank + qk_rope_head_dim per token, one
    latent "head", the target's dtype), in place of sched.py's 1 x 1 float32 layer."""
    import torch
    return MLAAttentionSpec(block_size=block_size, num_kv_heads=1,
                            head_size=TARGET_CFG["kv_lora_rank"] + TARGET_CFG["qk_rope_head_dim"],
                            dtype=torch.float16, cache_dtype_str="auto")


def group_spec(_names, spec, **kw):
    n = TARGET_CFG["num_hidden_layers"]
    layers = [f"model.layers.{i}.self_attn.attn" for i in range(n + 1)]   # + the MTP layer
    return oracle.KVCacheGroupSpec_real(layers, spec, is_eagle_group=True, **kw)


def build(cfg: dict, k: int):
    oracle.KVCacheGroupSpec_real = oracle.KVCacheGroupSpec
    real_full = oracle.FullAttentionSpec
    oracle.KVCacheGroupSpec, oracle.FullAttentionSpec = group_spec, mla_spec
    try:
        scheduler, hasher, vc, derived = oracle_eagle.build(cfg, k)
    finally:
        oracle.KVCacheGroupSpec, oracle.FullAttentionSpec = oracle.KVCacheGroupSpec_real, real_full
    sp, dm = vc.speculative_config, vc.speculative_config.draft_model_config
    groups = scheduler.kv_cache_config.kv_cache_groups
    derived.update(
        model_is_target=sp.model == vc.model_config.model,
        target_model_type=vc.model_config.hf_config.model_type,
        target_use_mla=vc.model_config.use_mla,
        draft_architectures=list(dm.architectures), draft_model_type=dm.hf_config.model_type,
        n_predict=getattr(dm.hf_config, "n_predict", None),
        use_multi_module_mtp=sp.use_multi_module_mtp(),
        config_use_eagle_block_drop=sp.use_eagle_block_drop(),
        kv_cache_groups=[{"spec": type(g.kv_cache_spec).__name__, "layers": len(g.layer_names),
                          "is_eagle_group": g.is_eagle_group} for g in groups])
    return scheduler, hasher, vc, derived


oracle_spec.build = functools.wraps(oracle_eagle.build)(build)


def main() -> int:
    code = 0
    for pair in sys.argv[1:]:
        inp, outp = pair.split("=")
        with open(outp, "w") as out:
            try:
                cfg, reqs = oracle.read_input(inp)
                if cfg.setdefault("spec_method", "mtp") != "mtp":
                    raise SystemExit("config spec_method must be mtp here (oracle_eagle.py "
                                     "answers the others)")
                oracle_eagle.method_of(cfg)
                code = max(code, oracle_spec.run(cfg, reqs, oracle_eagle.Lines(out)))
            except (ValueError, AssertionError, SystemExit, NotImplementedError) as err:
                out.write(json.dumps({"error": f"{type(err).__name__}: {err}"}) + "\n")
                code = max(code, 1)
            finally:
                oracle_eagle._current.clear()
    return code


if __name__ == "__main__":
    sys.exit(main())
