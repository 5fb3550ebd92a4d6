# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33 builds and plans for DeepSeek-V4 over pipeline
stages -> answers.json, for tests/test_deepseek_v4_pp.py. From the project root:

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        flock /tmp/vllm-build.lock nice -n 19 $R/venv/bin/python \\
        tests/data/deepseek_v4/pp/record_dsv4_pp.py [CONFIG ...]

Each stage is built as ../dsv4_build.py builds the model (its substitutions), with the
pipeline group's size and rank set (../../weights_census/longcat_pp's `set_pp`); per stage:
its decoder layers (`get_pp_indices`), its parameter and buffer bytes by dtype, its KV cache
specs by name. Then the engine core's road over all the stages' specs (v1/engine/core.py
292-352): `get_global_kv_cache_groups`, `get_kv_cache_configs` with the same memory on every
stage, each stage's projected groups and pool block, the scheduler's config, capacity.
"""
import importlib.util, json, sys, textwrap, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import dsv4_build as b
import record_dsv4 as r
_s = importlib.util.spec_from_file_location(
    "record_longcat_pp", HERE.parents[1] / "weights_census" / "longcat_pp" / "record_longcat_pp.py")
rlp = importlib.util.module_from_spec(_s)
_s.loader.exec_module(rlp)
from vllm.config import set_current_vllm_config
from vllm.distributed import parallel_state
from vllm.distributed.kv_transfer.kv_connector.utils import get_current_attn_backends
from vllm.distributed.utils import get_pp_indices
from vllm.v1.attention.backends.utils import (get_supported_kv_cache_layouts,
                                              resolve_kv_cache_layout)
from vllm.v1.core import kv_cache_planning as P
from vllm.v1.core.kv_cache_config_builder import get_kv_cache_config_builder
from vllm.v1.core.kv_cache_utils import (generate_scheduler_kv_cache_config,
                                         get_kv_cache_capacity,
                                         get_max_concurrency_for_kv_cache_config)

# config -> (max_model_len, available bytes on every stage)
CASES = {"tiny-dsv4": (4096, 1 << 30), "deepseek-v4-flash": (1048576, 20 << 30)}
SHAPES = ((1, 2), (1, 4), (2, 2))       # (TP, PP)


def groups_row(groups):
    return [{"layers": list(g.layer_names), "spec": type(g.kv_cache_spec).__name__,
             "block_size": g.kv_cache_spec.block_size,
             "page_size_bytes": g.kv_cache_spec.page_size_bytes} for g in groups]


def layouts(vc):
    """The KV cache layouts a stage's backends support, most preferred first (what each
    worker reports to the engine core)."""
    with set_current_vllm_config(vc):
        return [lay.name for lay in get_supported_kv_cache_layouts(get_current_attn_backends(vc))]


def planning(vc, specs, names, available):
    """core.py's road over every stage's specs (``names``: each stage's layouts),
    ``available`` bytes on each."""
    # (the stages' count, as `--pipeline-parallel-size` sets it: the batches in flight
    # (`max_concurrent_batches`), which size the sliding groups' reservation, follow it)
    vc.parallel_config.pipeline_parallel_size = len(specs)
    with set_current_vllm_config(vc):
        vc.cache_config.kv_cache_layout = None
        try:
            layout = resolve_kv_cache_layout(vc, names, [s for sp in specs for s in sp.values()])
        except (AssertionError, ValueError) as e:
            return {"available": available,     # (wrapped: record_dsv4's way)
                    "refused": textwrap.wrap(f"{type(e).__name__}: {e}", 90)}
        vc.cache_config.kv_cache_layout = layout.name
        groups = P.get_global_kv_cache_groups(vc, specs)
        builder = get_kv_cache_config_builder(vc)
        projected = [P._project_kv_cache_groups_to_worker(groups, sp) for sp in specs]
        per_block = [P._pool_bytes_per_block_from_builder(builder, vc, g) for g in projected]
        try:
            kcs = P.get_kv_cache_configs(vc, specs, [available] * len(specs), groups)
        except ValueError as e:
            return {"available": available, "refused": textwrap.wrap(str(e), 90)}
        sc = generate_scheduler_kv_cache_config(kcs)
        tokens, conc = get_kv_cache_capacity(vc, sc)
        return {"available": available, "layout": layout.name,
                "async_scheduling": vc.scheduler_config.async_scheduling,
                "max_concurrent_batches": vc.max_concurrent_batches,
                "max_num_batched_tokens": vc.scheduler_config.max_num_batched_tokens,
                "max_in_flight_tokens": vc.max_in_flight_tokens,
                "global_groups": groups_row(groups),
                "stages": [{"bytes_per_block": pb, "fits": available // pb,
                            "num_blocks": kc.num_blocks,
                            "groups": groups_row(kc.kv_cache_groups),
                            "tensors": [{"size": t.size, "layers": len(t.layers)}
                                        for t in kc.kv_cache_tensors]}
                           for pb, kc in zip(per_block, kcs)],
                "num_blocks": sc.num_blocks, "kv_cache_tokens": tokens,
                "max_concurrency": conc,
                "max_concurrency_stage0": get_max_concurrency_for_kv_cache_config(vc, kcs[0])}


def record(name):
    cfg = json.loads((HERE.parent / f"{name}.config.json").read_text())
    mml, available = CASES[name]
    n = cfg["num_hidden_layers"]
    out = {}
    for tp, pp in SHAPES:
        stages, specs, names, vc0 = [], [], [], None
        for rank in range(pp):
            t0 = time.perf_counter()
            rlp.set_pp(pp, rank)
            model, vc, sp = b.build(b.model_config(cfg, mml), tp, 0)
            vc0 = vc0 or vc
            names.append(layouts(vc))
            w = r.weights(model)
            w["scratch"] = r.scratch(model)
            w["layers"] = list(get_pp_indices(n, rank, pp))
            w["kv_cache_layouts"] = names[-1]
            w["kv_specs"] = [r.spec_row(k, s) for k, s in sp.items()]
            stages.append(w)
            specs.append(sp)
            del model
            print(name, f"TP {tp} PP {pp} stage {rank}", f"{time.perf_counter() - t0:.1f} s",
                  file=sys.stderr, flush=True)
        rlp.set_pp(1, 0)
        out[f"tp{tp}-pp{pp}"] = {"stages": stages,
                                 "planning": planning(vc0, specs, names, available)}
    return out


def main():
    b.rc.rqn.rmm_main_env()
    b.install()
    path = HERE / "answers.json"
    answers = json.loads(path.read_text()) if path.exists() else {"cases": {}}
    answers["substitutions"] = b.SUBSTITUTIONS + ["5. the pipeline group's size and rank set"]
    for name in sys.argv[1:] or list(CASES):
        answers["cases"][name] = {"max_model_len": CASES[name][0], **record(name)}
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
