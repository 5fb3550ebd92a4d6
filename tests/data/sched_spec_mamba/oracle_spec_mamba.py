# ruff: noqa
"""Dev tool (not a test, not run by CI): vLLM 0.33.0's real schedulers with speculative
decoding over Mamba (hybrid) KV cache groups, step by step.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_spec_mamba/oracle_spec_mamba.py [--mtp] IN.trace.jsonl=OUT.expected.jsonl ...

The trace is ../oracle_mamba.py's (its config line's `groups` list `{"type": "mamba"}`,
`{"type": "mamba", "checkpoint": true}` and `{"type": "full"}`; prefix caching on is vLLM's
"align" Mamba cache mode, off is "none", where a Mamba block holds max_model_len tokens) plus
the speculative keys of the spec oracles: `num_speculative_tokens` K, `spec_acceptance_rate`,
`spec_seed`, and for EAGLE-family drafting `spec_method` ("eagle3"; "mtp" with `--mtp`),
`disable_lookahead_block_hashes` and `eagle_groups`. Nothing is copied; what runs is:

- the Scheduler's construction: oracle_mamba.build_mamba_scheduler, with the VllmConfig the spec
  oracle being run makes (its SpeculativeConfig: oracle_spec.py's ngram, oracle_eagle.py's
  EAGLE, its derived values asserted there) and each Mamba group's MambaSpec given
  `num_speculative_blocks` = K as vLLM's `MambaBase.get_kv_cache_spec` builds it
  (model_executor/layers/mamba/abstract.py: `vllm_config.num_speculative_tokens`, 0 only with
  `use_replayssm`, off by default); the `eagle_groups` get `is_eagle_group`, as
  kv_cache_planning flags the groups holding the draft's layers (Qwen3-Next's MTP layer is a
  full-attention layer: its group alone), checked by oracle_eagle_hybrid.py's build;
- the step loop, the fake model and the lines: ../sched_spec/oracle_spec.py's `run` (ngram) or
  oracle_eagle_hybrid.py's (oracle_eagle.py's drafts and `skip_drafts` over oracle_spec.py).

`--mtp` (a process of its own: the target is read when the oracle is imported): method "mtp"
over ../sched_spec_mtp/oracle_mtp.py's tiny DeepSeek-V3 target (vLLM points the draft at the
target itself; its SpeculativeConfig call, imported from there). To the scheduler and the KV
cache manager single-module MTP is EAGLE (../sched_spec_mtp/DESIGN.md); the groups are this
trace's, not the target's MLA layers.
"""

import dataclasses
import importlib.util
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent
MTP = "--mtp" in sys.argv[1:]
if MTP:      # (read by sched.py when it is first imported, below)
    os.environ["SCHED_ORACLE_MODEL"] = str(DATA / "sched_spec_mtp" / "tiny-deepseek-v3")
sys.path.insert(0, str(DATA))


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)     # each exits with its message when ORACLE_TOOL is unset
    return module


# ngram: oracle_spec.py as it is (a copy of its own: oracle_eagle.py patches the one it loads)
ngram_spec = _load("oracle_spec_ngram", DATA / "sched_spec" / "oracle_spec.py")
hybrid = _load("oracle_eagle_hybrid", DATA / "sched_spec_eagle" / "oracle_eagle_hybrid.py")
oracle_eagle = hybrid.oracle_eagle
oracle = oracle_eagle.oracle            # sched.py: one module for all of them
import oracle_mamba                     # noqa: E402  (tests/data, on the path above)

assert oracle_mamba.oracle is oracle
if MTP:
    oracle_mtp = _load("oracle_mtp", DATA / "sched_spec_mtp" / "oracle_mtp.py")
    oracle_eagle.SpeculativeConfig = oracle_mtp.spec_config     # method mtp, model unset

from vllm.v1.kv_cache_interface import KVCacheGroupSpec, MambaSpec  # noqa: E402

_case: dict = {}                        # the config line of the case being built
_real_groups = oracle_mamba.kv_cache_groups


def kv_cache_groups(groups: list, block_size: int, mode: str = "align",
                    mamba_block_size: int | None = None) -> list:
    """oracle_mamba's groups, each MambaSpec with K speculative blocks, the `eagle_groups`
    flagged."""
    k = _case["num_speculative_tokens"]
    flagged = set(_case.get("eagle_groups") or ())
    out = []
    for i, g in enumerate(_real_groups(groups, block_size, mode, mamba_block_size)):
        spec = g.kv_cache_spec
        if isinstance(spec, MambaSpec):
            spec = dataclasses.replace(spec, num_speculative_blocks=k)
        out.append(KVCacheGroupSpec(g.layer_names, spec, is_eagle_group=i in flagged))
    return out


def build_scheduler(cfg: dict, async_scheduling: bool = False):
    """oracle_mamba's Scheduler, its VllmConfig the one the spec oracle patched into sched.py
    (oracle_mamba imports vllm.config's names when it runs: shown the same one there)."""
    import vllm.config as config_module

    real, patched = config_module.VllmConfig, oracle.VllmConfig

    class Spec(real):
        """(a class, not the patched function: modules vLLM imports meanwhile annotate with
        it; what it makes is the real VllmConfig the spec oracle's function returns)"""
        def __new__(cls, **kw):
            return patched(**kw)

    config_module.VllmConfig = Spec
    _case.clear()
    _case.update(cfg)
    try:
        built = oracle_mamba.build_mamba_scheduler(cfg, async_scheduling)
    finally:
        config_module.VllmConfig = real
    k = cfg["num_speculative_tokens"]
    assert [m.num_speculative_blocks for m in built[0].kv_cache_manager.coordinator
            .single_type_managers if isinstance(m.kv_cache_spec, MambaSpec)] == \
        [k] * sum(g["type"] == "mamba" for g in cfg["groups"])
    return built


oracle_mamba.kv_cache_groups = kv_cache_groups
oracle.build_scheduler = build_scheduler


def one(inp: str, out) -> int:
    cfg, reqs = oracle_mamba.read_trace(inp)
    method = cfg.get("spec_method", "ngram")
    if method == "ngram":
        cfg.pop("spec_method", None)
        for key in ("disable_lookahead_block_hashes", "eagle_groups"):
            if key in cfg:
                raise SystemExit(f"config {key} is for EAGLE-family methods")
        return ngram_spec.run(cfg, reqs, out)
    if (method == "mtp") != MTP:
        raise SystemExit("config spec_method mtp runs with --mtp, the others without it")
    oracle_eagle.method_of(cfg)
    hybrid.eagle_groups_of(cfg)
    return oracle_eagle.oracle_spec.run(cfg, reqs, oracle_eagle.Lines(out))


def main() -> int:
    code = 0
    for pair in [a for a in sys.argv[1:] if a != "--mtp"]:
        inp, outp = pair.split("=")
        with open(outp, "w") as out:
            try:
                code = max(code, one(inp, out))
            except (ValueError, AssertionError, SystemExit, NotImplementedError) as err:
                out.write(json.dumps({"error": f"{type(err).__name__}: {err}"}) + "\n")
                code = max(code, 1)
            finally:
                oracle_eagle._current.clear()
        print(json.dumps({"done": inp, "rc": code}), file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
