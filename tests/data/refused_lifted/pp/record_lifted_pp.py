# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33 builds and plans for the classes lifted from kvcli's
refusals (../*.config.json: Sarvam MLA, LongCat-Flash-Lite's n-gram model, RNJ-1, openPangu
Pro MoE V2, Unlimited-OCR) over pipeline stages -> answers.json, for tests/test_lifted_pp.py.
From the project root:

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        flock /tmp/vllm-build.lock nice -n 19 $R/venv/bin/python \\
        tests/data/refused_lifted/pp/record_lifted_pp.py [CONFIG ...]

Each stage is built as ../record_refused.py builds the model (its stand-in config classes and
backend pick) with the pipeline group's size and rank set (../../weights_census/longcat_pp's
`set_pp`); per stage and the engine core's road over all stages, the rows of
../../deepseek_v4/pp/record_dsv4_pp.py (`planning`: get_global_kv_cache_groups,
get_kv_cache_configs with the same memory on every stage, the pool, capacity).
"""
import importlib.util, json, sys, textwrap, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import record_refused as rr     # (imports dsv4_build, record_dsv4 and the stand-ins)


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


pp4 = load("record_dsv4_pp", HERE.parents[1] / "deepseek_v4" / "pp" / "record_dsv4_pp.py")
from vllm.config import ParallelConfig
from vllm.distributed.utils import get_pp_indices

b, r = rr.b, rr.r
MIB, GIB = 1 << 20, 1 << 30
TINY = ((1, 2), (1, 4), (2, 2), (2, 4))         # (TP, PP)
BIG = ((1, 2), (1, 4), (2, 4))
# config -> (max_model_len, available bytes on every stage, shapes)
CASES = {"tiny-sarvam-mla": (4096, 256 * MIB, TINY),
         "tiny-sarvam-mla-noq": (4096, 256 * MIB, TINY),
         "sarvam-105b": (4096, 20 * GIB, BIG),
         "tiny-longcat-ngram": (4096, 256 * MIB, TINY),
         "longcat-flash-lite": (4096, 20 * GIB, BIG),
         "tiny-rnj1": (4096, 256 * MIB, TINY), "rnj-1": (32768, 20 * GIB, BIG),
         "tiny-pangu-v2-sink": (2048, 256 * MIB, TINY[:3]),
         "tiny-pangu-v2-sinkv": (4096, 256 * MIB, TINY),
         "pangu-pro-moe-v2": (32768, 20 * GIB, BIG),
         "tiny-unlimited-ocr": (4096, 256 * MIB, TINY), "unlimited-ocr": (8192, 20 * GIB, BIG),
         # (no stage built: vLLM's config check, ModelConfig.verify_with_parallel_config)
         "tiny-domyn-edge": (4096, 0, ())}


def refused(e):
    return {"refused": textwrap.wrap(f"{type(e).__name__}: {e}"[:600], 90)}


def record(name):
    cfg = json.loads((HERE.parent / f"{name}.config.json").read_text())
    named = rr.BACKENDS.get(name)
    b.current_platform.get_attn_backend_cls = (
        rr.pick_backend if named is None else lambda *a, **k: getattr(rr.E, named).get_path())
    mml, available, shapes = CASES[name]
    n = b.model_config(cfg, mml).hf_text_config
    n = getattr(n, "num_layers", None) or n.num_hidden_layers
    out = {"max_model_len": mml, "num_layers": n,
           "attention_backend": named or "by the layer (pick_backend)", "verify": {}}
    for pp in (2, 4):   # (what `--pipeline-parallel-size` meets before any worker starts)
        try:
            mc = b.model_config(cfg, mml)
            mc.verify_with_parallel_config(ParallelConfig(pipeline_parallel_size=pp))
            out["verify"][str(pp)] = "ok"
        except Exception as e:
            out["verify"][str(pp)] = refused(e)["refused"]
    for tp, pp in shapes:
        stages, specs, names, vc0 = [], [], [], None
        try:
            for rank in range(pp):
                t0 = time.perf_counter()
                pp4.rlp.set_pp(pp, rank)
                model, vc, sp = b.build(b.model_config(cfg, mml), tp, 0)
                vc0 = vc0 or vc
                names.append(pp4.layouts(vc))
                w = r.weights(model)
                w["scratch"] = r.scratch(model)
                w["layers"] = list(get_pp_indices(n, rank, pp))
                w["kv_cache_layouts"] = names[-1]
                w["kv_specs"] = [r.spec_row(k, s) for k, s in sp.items()]
                stages.append(w)
                specs.append(sp)
                del model
                print(name, f"TP {tp} PP {pp} stage {rank}", w["layers"],
                      f"{time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
            pp4.rlp.set_pp(1, 0)
            try:
                plan = pp4.planning(vc0, specs, names, available)
            except Exception as e:
                plan = {"available": available, **refused(e)}
            out[f"tp{tp}-pp{pp}"] = {"stages": stages, "planning": plan}
        except Exception as e:      # vLLM's own refusal of a stage
            pp4.rlp.set_pp(1, 0)
            out[f"tp{tp}-pp{pp}"] = {"stages": stages, "stage_refused": len(stages),
                                     **refused(e)}
            print(name, f"TP {tp} PP {pp} refused", e, file=sys.stderr, flush=True)
    return out


def main():
    b.rc.rqn.rmm_main_env()
    rr.stand_ins.register()
    path = HERE / "answers.json"
    answers = json.loads(path.read_text()) if path.exists() else {"cases": {}}
    answers["substitutions"] = [*b.SUBSTITUTIONS[:1], *rr.stand_ins.SUBSTITUTIONS,
                                "2. the backend by the layer's use_mla (pick_backend)",
                                "5. the pipeline group's size and rank set"]
    for name in sys.argv[1:] or list(CASES):
        answers["cases"][name] = record(name)
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
