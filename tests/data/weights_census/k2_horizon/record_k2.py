"""Record what vLLM 0.33 builds, rank by rank, for the K2-Horizon configs here (written by
make_k2_cases.py) as an H100 would start them (-> answers.json): ../quant2/record_quant2.py's
build at TP 1, 2 and 4, with one more substitution: a config class registered for
`k2_horizon` (transformers and vLLM have none; a checkpoint brings its own as remote code),
a bare PretrainedConfig holding the config.json's keys as written.

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$ORACLE_HOME/src:tests/data/mtp_draft/oracle_stubs_vision:$CT_PKGS \\
        timeout 3000 $ORACLE_HOME/venv/bin/python \\
        tests/data/weights_census/k2_horizon/record_k2.py [CASE ...]
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

from transformers import AutoConfig, PretrainedConfig

HERE = Path(__file__).resolve().parent


class K2HorizonConfig(PretrainedConfig):
    model_type = "k2_horizon"


AutoConfig.register("k2_horizon", K2HorizonConfig)
spec = importlib.util.spec_from_file_location("record_quant2",
                                              HERE.parent / "quant2" / "record_quant2.py")
rq = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rq)



def main():
    path = HERE / "answers.json"
    answers = (json.loads(path.read_text()) if path.exists() else
               {"vllm_version": rq.vllm.__version__, "torch": rq.torch.__version__, "cases": {}})
    answers["substitutions"] = sorted(set(rq.riq.SUBSTITUTIONS) | set(rq.rmo.SUBSTITUTIONS)
                                      | set(rq.rc.SUBSTITUTIONS)) + [
        "a config class registered for k2_horizon: a bare PretrainedConfig (see docstring)"]
    rq.rc.rqn.rmm_main_env()
    todo = {p.name: json.loads(p.read_text()) for p in sorted(HERE.glob("*.config.json"))}
    for name in sys.argv[1:] or list(todo):
        key = f"weights_census/k2_horizon/{name}"
        try:
            answers["cases"][key] = rq.rc.record(key, todo[name], rq.TPS)
        except Exception as e:           # the config refused before any build
            answers["cases"][key] = {"refused": f"{type(e).__name__}: {e}"[:600]}
            print(name, "refused", file=sys.stderr, flush=True)
    answers["cases"] = dict(sorted(answers["cases"].items()))
    path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
