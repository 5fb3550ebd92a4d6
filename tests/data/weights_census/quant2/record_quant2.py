"""Record what vLLM 0.33 builds, rank by rank, for the quantised checkpoints here
(`*.config.json`, written by make_quant2_cases.py) as an H100 would start them (-> answers.json):
every rank at TP 1, 2 and 4, and 8 for the sparse MLA models (parameters, bytes by dtype, rank
0's names), or vLLM's refusal. Sparse MLA on FLASH_ATTN_MLA_SPARSE (../record_census.py's
substitution).

A development tool, never run by the tests. It loads ../int_quant/record_int_quant.py and
../modelopt/record_modelopt.py (their H100 substitutions: the platform each quantisation
module asks is CUDA 9.0, no linear kernel or MoE backend built; listed in answers.json), and
records each config with ../record_census.py's `record`. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$ORACLE_HOME/src:tests/data/mtp_draft/oracle_stubs_vision:$CT_PKGS \\
        timeout 3000 $ORACLE_HOME/venv/bin/python \\
        tests/data/weights_census/quant2/record_quant2.py [CASE ...]

(ORACLE_HOME=~/.cache/vllm-oracle; CT_PKGS a folder with compressed-tensors 0.17.0 and loguru,
as ../int_quant/README.md makes it.)
"""
# ruff: noqa
import importlib.util, json, os, sys
from pathlib import Path


HERE = Path(__file__).resolve().parent


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


riq = load("record_int_quant", HERE.parent / "int_quant" / "record_int_quant.py")
rmo = load("record_modelopt", HERE.parent / "modelopt" / "record_modelopt.py")
rc = riq.rc

import torch
import vllm

TPS = (1, 2, 4)


def main():
    path = HERE / "answers.json"
    answers = (json.loads(path.read_text()) if path.exists() else
               {"vllm_version": vllm.__version__, "torch": torch.__version__, "cases": {}})
    answers["substitutions"] = sorted(set(riq.SUBSTITUTIONS) | set(rmo.SUBSTITUTIONS)
                                     | set(rc.SUBSTITUTIONS))
    rc.rqn.rmm_main_env()
    todo = {p.name: json.loads(p.read_text()) for p in sorted(HERE.glob("*.config.json"))}
    for name in sys.argv[1:] or list(todo):
        key = f"weights_census/quant2/{name}"
        try:
            answers["cases"][key] = rc.record(key, todo[name],
                                              TPS + ((8,) if "index_topk" in todo[name] else ()))
        except Exception as e:           # the config refused before any build
            answers["cases"][key] = {"refused": f"{type(e).__name__}: {e}"[:600]}
            print(name, "refused", file=sys.stderr, flush=True)
        answers["cases"] = dict(sorted(answers["cases"].items()))
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
