"""Record what vLLM 0.33 builds, rank by rank, for the configs here (`*.config.json`, written
by make_rules_cases.py) as an H100 would start them (-> answers.json).

A development tool, never run by the tests. It imports ../int_quant/record_int_quant.py, whose
import applies every substitution the AWQ / GPTQ census makes (those of ../record_census.py,
the platform an H100's, no kernel chosen), and records each config the same way: vLLM's own
model class built on the meta device at TP 1, 2, 4 and 8, every rank, or vLLM's refusal (of
the config itself, before any rank is built: ``refused`` beside ``tp``). From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$ORACLE_HOME/src:tests/data/mtp_draft/oracle_stubs_vision:$CT_PKGS \\
        timeout 1500 $ORACLE_HOME/venv/bin/python \\
        tests/data/weights_census/quant_rules/record_rules.py [CASE ...]

$CT_PKGS: compressed-tensors 0.17.0 and loguru, as ../int_quant/README.md says (the
compressed-tensors cases need them, the others do not).
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_int_quant", HERE.parent / "int_quant" / "record_int_quant.py")
riq = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(riq)         # vLLM imported, every substitution applied
rc = riq.rc

import torch
import vllm


def main():
    path = HERE / "answers.json"
    answers = (json.loads(path.read_text()) if path.exists() else
               {"vllm_version": vllm.__version__, "torch": torch.__version__, "cases": {}})
    answers["substitutions"] = riq.SUBSTITUTIONS
    rc.rqn.rmm_main_env()
    todo = {p.name: json.loads(p.read_text()) for p in sorted(HERE.glob("*.config.json"))}
    for name in sys.argv[1:] or list(todo):
        key = f"weights_census/quant_rules/{name}"
        try:
            answers["cases"][key] = rc.record(key, todo[name], rc.TPS)
        except Exception as e:           # the config refused before any build (every TP)
            answers["cases"][key] = {"refused": f"{type(e).__name__}: {e}"[:600]}
            print(name, "refused", file=sys.stderr, flush=True)
        answers["cases"] = dict(sorted(answers["cases"].items()))
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
