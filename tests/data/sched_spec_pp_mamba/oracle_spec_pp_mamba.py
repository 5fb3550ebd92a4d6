# ruff: noqa
"""Dev tool (not a test, not run by CI): vLLM 0.33.0's real schedulers with speculative decoding
(ngram, eagle3, mtp) over Mamba groups under pipeline parallelism, step by step.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_spec_pp_mamba/oracle_spec_pp_mamba.py IN.trace.jsonl=OUT.expected.jsonl ...

The trace is ../sched_spec_mamba's (Mamba1 / Mamba2 groups beside a full-attention group, "align"
or "none" mode, K, the acceptance rate and seed, `spec_method`, `disable_lookahead_block_hashes`,
`eagle_groups`) with `"pipeline_parallel_size": N`. The cases of one call are all mtp or none
(mtp's target is chosen when the oracle's sched.py is imported). Nothing is copied; two dev
tools are imported and joined:

- ../sched_spec_mamba/oracle_spec_mamba.py: the Scheduler's construction over Mamba groups
  (../oracle_mamba.py's, each MambaSpec with K speculative blocks, the `eagle_groups` flagged)
  under the spec oracles' SpeculativeConfig (ngram; eagle3 and mtp through
  oracle_eagle_hybrid.py's build, mtp's draft left for vLLM to point at the target);
- ../sched_spec_pp/oracle_spec_pp.py: the batch-queue loop (../sched_pp/oracle_pp.py's
  `step_with_batch_queue` at `max_concurrent_batches`), the drafts of the batch just scheduled
  under sync PP (K = 0 after a batch that skips them), the fake model's accepted drafts, the
  lines and the summary. Its builds are replaced by the ones above.

The one thing added: oracle_mamba's build makes its own `ParallelConfig()` (from vllm.config),
so `vllm.config.ParallelConfig` is, for the build's moment, the one oracle_spec_pp's build
makes, `ParallelConfig(pipeline_parallel_size=N)`: vLLM then derives the depth (N, or N + 1
under async scheduling), `use_pp` and the target parallel config the draft's is made from.
"""

import importlib.util
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)        # each exits with its message when ORACLE_TOOL is unset
    return mod


def _method(trace: str) -> str:
    with open(trace) as f:
        return json.loads(f.readline())["config"].get("spec_method", "ngram")


PAIRS = sys.argv[1:]
MTP = {_method(p.split("=")[0]) == "mtp" for p in PAIRS}
if len(MTP) > 1:
    sys.exit("oracle_spec_pp_mamba: give mtp cases and the others in separate calls (the "
             "target model is chosen when sched.py is imported)")
MTP = MTP == {True}
# (both tools read the command line when imported: oracle_spec_mamba its --mtp, oracle_spec_pp
# the pairs' methods)
sys.argv[1:] = ["--mtp"] if MTP else []
spec_mamba = _load("oracle_spec_mamba", DATA / "sched_spec_mamba" / "oracle_spec_mamba.py")
sys.argv[1:] = PAIRS
spec_pp = _load("oracle_spec_pp", DATA / "sched_spec_pp" / "oracle_spec_pp.py")
oracle = spec_pp.oracle
assert spec_mamba.oracle is oracle
assert oracle.build_scheduler is spec_mamba.build_scheduler     # (Mamba groups, K blocks)

import vllm.config as config_module  # noqa: E402


def with_pp(build):
    """`build` with vllm.config's ParallelConfig the one oracle_spec_pp's build set in sched.py
    (PP from the config line), which oracle_mamba's build imports when it runs."""

    def pp_build(cfg: dict, k: int):
        real, made = config_module.ParallelConfig, oracle.ParallelConfig

        class PP(real):
            """(a class: modules vLLM imports meanwhile annotate with it; what it makes is the
            real ParallelConfig with the case's PP)"""
            def __new__(cls, **kw):
                assert not kw, kw
                return made()

        config_module.ParallelConfig = PP
        try:
            built = build(cfg, k)
        finally:
            config_module.ParallelConfig = real
        pc = built[2].parallel_config
        assert type(pc) is real and pc.pipeline_parallel_size > 1, pc
        assert built[2].speculative_config.target_parallel_config is pc
        return built

    return pp_build


if MTP:
    spec_pp.BUILDS = {"mtp": with_pp(spec_mamba.hybrid.build)}
else:
    spec_pp.BUILDS = {"ngram": with_pp(spec_mamba.ngram_spec.build),
                      "hybrid_eagle": with_pp(spec_mamba.hybrid.build)}


def main() -> int:
    code = 0
    for pair in PAIRS:
        inp, outp = pair.split("=")
        with open(outp, "w") as out:
            try:
                cfg, reqs = spec_mamba.oracle_mamba.read_trace(inp)
                if cfg.get("spec_method", "ngram") != "ngram":
                    spec_mamba.oracle_eagle.method_of(cfg)
                spec_pp._case.append(spec_pp.Case(cfg, reqs))
                code = max(code, spec_pp.oracle_pp.run(cfg, reqs,
                                                      spec_pp.Lines(out, spec_pp._case[-1])))
            except (ValueError, AssertionError, SystemExit, NotImplementedError) as err:
                out.write(json.dumps({"error": f"{type(err).__name__}: {err}"}) + "\n")
                code = max(code, 1)
            finally:
                spec_pp._case.clear()
                spec_mamba.oracle_eagle._current.clear()
        print(json.dumps({"done": inp, "rc": code}), file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
