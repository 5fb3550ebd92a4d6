"""Record what vLLM 0.33 keeps of DeepSeek-V3's MTP module on each rank when the target is a
ModelOpt checkpoint (the `deepseek-v3-modelopt-*.config.json` here: the tiny DeepSeek-V3 of
../int_quant, `num_nextn_predict_layers` 1, its MTP layer at model.layers.2), as an H100 builds
it (-> drafts_answers.json).

A development tool, never run by the tests. It executes record_modelopt.py here first (its H100
platform and kernel substitutions) and builds each case with ../record_drafts.py's `build`
(the target by `initialize_model`, the draft by the V2 runner's `load_eagle_model`, on the meta
device; the draft's own parameters counted), every rank. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$ORACLE_HOME/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 1500 $ORACLE_HOME/venv/bin/python \\
        tests/data/weights_census/modelopt/record_modelopt_drafts.py [NAME.config.json ...]
"""
# ruff: noqa
import importlib.util, json, sys, tempfile, time, traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


rm = _load("record_modelopt", HERE / "record_modelopt.py")
rd = _load("record_drafts", HERE.parent / "record_drafts.py")
import torch, vllm


def record(name):
    tmp = Path(tempfile.mkdtemp())
    (tmp / "config.json").write_text((HERE / name).read_text())
    out = {"method": "mtp", "target": f"weights_census/modelopt/{name}", "draft": None, "tp": {}}
    for tp in rd.TPS:
        ranks = []
        for rank in range(tp):
            t0 = time.perf_counter()
            try:
                ranks.append(rd.build(tmp, "mtp", None, tp, rank))
            except Exception as e:       # vLLM's own refusal
                ranks.append({"refused": f"{type(e).__name__}: {e}"[:400],
                              "traceback_tail": traceback.format_exc().splitlines()[-4:]})
            print(name, f"TP {tp} rank {rank}", "refused" if "refused" in ranks[-1] else "ok",
                  f"{time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
            if "refused" in ranks[-1]:
                break
        out["tp"][str(tp)] = ranks
    rd.rc.set_tp(1, 0)
    return out


def main():
    rd.rqn.rmm_main_env()
    path = HERE / "drafts_answers.json"
    answers = (json.loads(path.read_text()) if path.exists() else
               {"vllm_version": vllm.__version__, "torch": torch.__version__, "cases": {}})
    answers["substitutions"] = rm.SUBSTITUTIONS + rd.SUBSTITUTIONS
    names = sys.argv[1:] or sorted(p.name for p in HERE.glob("deepseek-v3-modelopt-*.config.json"))
    for name in names:
        answers["cases"][f"weights_census/modelopt/{name}"] = record(name)
        answers["cases"] = dict(sorted(answers["cases"].items()))
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
