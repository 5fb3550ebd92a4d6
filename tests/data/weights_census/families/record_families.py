"""Record what vLLM 0.33 builds, rank by rank, for the quantised checkpoints of the families
here (`*.config.json`, written by make_family_cases.py) as an H100 would start them
(-> answers.json): every rank at TP 1, 2 and 4 (parameters, bytes by dtype, rank 0's names),
or vLLM's refusal.

A development tool, never run by the tests. It loads ../int_quant/record_int_quant.py and
../modelopt/record_modelopt.py (their H100 substitutions: the platform each quantisation
module asks is CUDA 9.0, no linear kernel or MoE backend built; listed in answers.json) and
../../kv_spec_census/record_kv_specs.py (Gemma 3n's sparse GELU threshold computed on the CPU),
and records each config with ../record_census.py's `record`. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$ORACLE_HOME/src:tests/data/mtp_draft/oracle_stubs_vision:$CT_PKGS \\
        timeout 3000 $ORACLE_HOME/venv/bin/python \\
        tests/data/weights_census/families/record_families.py [CASE ...]

(ORACLE_HOME=~/.cache/vllm-oracle; CT_PKGS a folder with compressed-tensors 0.17.0 and loguru,
as ../int_quant/README.md makes it.)
"""
# ruff: noqa
import importlib.util, json, os, sys
from pathlib import Path

# (gpt2 and OPT configs give max_position_embeddings under 4096, the census's max_model_len;
# the length changes no parameter)
os.environ["VLLM_ALLOW_LONG_MAX_MODEL_LEN"] = "1"

HERE = Path(__file__).resolve().parent


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


rks = load("record_kv_specs", HERE.parents[1] / "kv_spec_census" / "record_kv_specs.py")
riq = load("record_int_quant", HERE.parent / "int_quant" / "record_int_quant.py")
rmo = load("record_modelopt", HERE.parent / "modelopt" / "record_modelopt.py")
rc = riq.rc

import torch
import vllm

TPS = (1, 2, 4)


def record_folder(here, extra=(), before_each=None):
    """Record the configs of `here` named on the command line (all without) at TPS into
    `here`/answers.json, written after each (a config refused before any build: its error),
    with this file's substitutions and `extra`; `before_each(name)` runs before a config's."""
    path = here / "answers.json"
    answers = (json.loads(path.read_text()) if path.exists() else
               {"vllm_version": vllm.__version__, "torch": torch.__version__, "cases": {}})
    answers["substitutions"] = sorted(set(riq.SUBSTITUTIONS) | set(rmo.SUBSTITUTIONS)) + list(
        extra)
    rc.rqn.rmm_main_env()
    todo = {p.name: json.loads(p.read_text()) for p in sorted(here.glob("*.config.json"))}
    for name in sys.argv[1:] or list(todo):
        key = f"weights_census/{here.name}/{name}"
        if before_each is not None:
            before_each(name)
        try:
            answers["cases"][key] = rc.record(key, todo[name], TPS)
        except Exception as e:           # the config refused before any build
            answers["cases"][key] = {"refused": f"{type(e).__name__}: {e}"[:600]}
            print(name, "refused", file=sys.stderr, flush=True)
        answers["cases"] = dict(sorted(answers["cases"].items()))
        path.write_text(json.dumps(answers, indent=1) + "\n")


def main():
    record_folder(HERE, ["Gemma 3n's sparse GELU: its threshold computed on the CPU "
                         "(../../kv_spec_census)"])


if __name__ == "__main__":
    main()
