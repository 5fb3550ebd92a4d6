# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33 builds and plans for the quantised Nemotron-NAS
configs here over pipeline stages -> answers_pp.json, for tests/test_nemotron_nas_quant_pp.py.
From the project root:

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        flock /tmp/vllm-build.lock nice -n 19 $R/venv/bin/python \\
        tests/data/nemotron_nas_quant/record_nas_quant_pp.py [NAME ...]

Each stage is built as record_nas_quant.py builds a rank (its H100 ModelOpt / fp8
substitutions, ../nemotron_nas/record_nas.py's build) with the pipeline group's size and rank
set (../weights_census/longcat_pp's `set_pp`); the rows per stage and the engine core's road
over all stages (`planning`: get_global_kv_cache_groups, get_kv_cache_configs with the same
memory on every stage, the pool, capacity) are ../deepseek_v4/pp/record_dsv4_pp.py's.
"""
import importlib.util, json, sys, textwrap, time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


rq = load("record_nas_quant", HERE / "record_nas_quant.py")
rn, rmo = rq.rn, rq.rmo
pp4 = load("record_dsv4_pp", HERE.parent / "deepseek_v4" / "pp" / "record_dsv4_pp.py")
r = rn.record_dsv4
from vllm.distributed.utils import get_pp_indices

MIB, GIB = 1 << 20, 1 << 30
TINY = ((1, 2), (1, 4), (2, 2), (2, 4))         # (TP, PP)
BIG = ((1, 2), (1, 4), (2, 4))
CASES = {"tiny-nas-a-fp8": TINY, "tiny-nas-a-modelopt-fp8-skip": TINY,
         "tiny-nas-a-modelopt-nvfp4-skip": TINY, "tiny-nas-b-fp8-block": TINY,
         "tiny-nas-b-modelopt-fp8": TINY, "super-49b-v1_5-fp8": BIG,
         "super-49b-v1_5-modelopt-fp8": BIG, "super-49b-v1_5-modelopt-nvfp4": BIG,
         "ultra-253b-v1-modelopt-fp8": ((1, 4), (2, 4))}


def record(name):
    cfg = json.loads((HERE / f"{name}.config.json").read_text())
    tiny = name.startswith("tiny")
    mml = 4096 if tiny else 131072
    available = 256 * MIB if tiny else 20 * GIB
    n = cfg["num_hidden_layers"]
    out = {"max_model_len": mml}
    for tp, pp in CASES[name]:
        stages, specs, names, vc0 = [], [], [], None
        try:
            for rank in range(pp):
                t0 = time.perf_counter()
                pp4.rlp.set_pp(pp, rank)
                model, vc, sp = rn.build(rn.model_config(cfg, mml), tp, 0)
                vc0 = vc0 or vc
                names.append(pp4.layouts(vc))
                w = r.weights(model)
                w.pop("scratch", None)
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
                plan = {"available": available, **rn.refused(e)}
            out[f"tp{tp}-pp{pp}"] = {"stages": stages, "planning": plan}
        except Exception as e:      # vLLM's own refusal of a stage
            pp4.rlp.set_pp(1, 0)
            out[f"tp{tp}-pp{pp}"] = {"stages": stages, "stage_refused": len(stages),
                                     **rn.refused(e)}
            print(name, f"TP {tp} PP {pp} refused", e, file=sys.stderr, flush=True)
    return out


def main():
    rn.rc.rqn.rmm_main_env()
    path = HERE / "answers_pp.json"
    answers = json.loads(path.read_text()) if path.exists() else {"cases": {}}
    answers["substitutions"] = [textwrap.wrap(s, 90) for s in rmo.SUBSTITUTIONS + [
        "nemotron-nas: ../nemotron_nas/nas_config.DeciLMConfig (the remote config class's "
        "stand-in)", "attention backend: FLASH_ATTN", "the pipeline group's size and rank set"]]
    for name in sys.argv[1:] or list(CASES):
        answers["cases"][name] = record(name)
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
